"""The envelope check of a plan: no predicted figure beyond a physical or a best-published bound.

- Decode: a step reads every weight of its GPU's shard at least once, so no step is shorter than the
  shard's weight bytes ÷ the memory bandwidth (physical).
- Training: model-FLOPs utilization no higher than the best published for the device class
  (data/plan/envelope.yaml: Megatron-Core's 47% on H100, FlashAttention-2's 72% on A100).
- Serving throughput: a replica's output tokens per second per GPU, as parameter-tokens (× active
  parameters), no higher than the best MLPerf Inference (v5.0 or earlier) Llama 2 70B Offline result per GPU
  of that device; a device without a result is bounded through its dense bf16 peak (derived).

A plan that trips a check says so on the sheet and in the headline, with the figure at the bound, instead of
promising the prediction.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sizeup.errors import CatalogError

__all__ = ["Check", "envelope_checks"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    name: str
    predicted: float
    bound: float
    unit: str
    """"s" (the prediction must be at least the bound) or "fraction" / "tokens/s" (at most)."""
    tripped: bool
    basis: str
    consequence: str = ""
    """What the plan is at the bound, when tripped (e.g. "572 h → 814 h at 47% MFU")."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "predicted": self.predicted, "bound": self.bound, "unit": self.unit,
                "tripped": self.tripped, "basis": self.basis, "consequence": self.consequence}


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml

    path = builtin_data_dir() / "plan" / "envelope.yaml"
    data = read_yaml(path)
    try:
        for entry in data["mfu"]:
            if not (0 < float(entry["mfu"]) <= 1) or not entry["source"] or not entry["retrieved"]:
                raise ValueError(f"mfu entry {entry!r}")
        for entry in data["mlperf"]["entries"]:
            if float(entry["tokens_per_s"]) <= 0 or not entry["source"] or not entry["retrieved"]:
                raise ValueError(f"mlperf entry {entry!r}")
        float(data["mlperf"]["model_params"])
    except (KeyError, TypeError, ValueError) as e:
        raise CatalogError(f"{path}: malformed envelope table ({e})") from None
    return data


def envelope_checks(result) -> tuple[Check, ...]:
    """Every check that applies to the chosen (else closest) option of `result`."""
    chosen = result.chosen or result.closest
    if chosen is None:
        return ()
    checks: list[Check] = []
    if chosen.detail.get("decode_step_s"):
        checks.append(_decode_bound(chosen, chosen.detail["decode_step_s"][0], "decode step at batch 1"))
        if result.arch is not None:
            checks.append(_mlperf(chosen, result.arch))
    elif result.scenario.task == "edge" and "tpot" in chosen.latency:
        derate = result.scenario.edge.thermal_derate if result.scenario.edge else 1.0
        checks.append(_decode_bound(chosen, chosen.latency["tpot"] * derate, "decode step (before the derate)"))
    if "mfu" in chosen.detail and result.scenario.task in ("finetune", "pretrain"):
        deadline = result.scenario.job.deadline_hours if result.scenario.job else None
        checks.append(_mfu(chosen, deadline))
    return tuple(c for c in checks if c is not None)


def _decode_bound(chosen, step_s: float, what: str) -> Check | None:
    weights = chosen.detail.get("memory_parts", {}).get("weights")
    bandwidth = chosen.device.memory_bandwidth_bytes_per_s
    if not weights or not bandwidth:
        return None
    bound = weights / bandwidth
    return Check(name=what, predicted=step_s, bound=bound, unit="s", tripped=step_s < bound * (1 - 1e-9),
                 basis=f"physical: {weights / 1e9:,.2f} GB of weights per GPU ÷ "
                       f"{bandwidth / 1e9:,.0f} GB/s of memory bandwidth",
                 consequence=f"at least {bound * 1e3:,.2f} ms per step" if step_s < bound else "")


def _mfu(chosen, deadline: float | None) -> Check:
    entries = _data()["mfu"]
    arch = chosen.device.architecture
    mine = [e for e in entries if arch in e["architectures"]]
    entry = max(mine or entries, key=lambda e: e["mfu"])
    bound = float(entry["mfu"])
    mfu = float(chosen.detail["mfu"])
    hours = chosen.latency.get("hours", 0.0)
    scope = (f"best published on {arch}" if mine else f"no published figure for {arch or chosen.device.id}: the "
                                                        "highest of any class")
    tripped = mfu > bound
    at_bound = hours * mfu / bound
    return Check(name="model-FLOPs utilization", predicted=mfu, bound=bound, unit="fraction", tripped=tripped,
                 basis=f"{scope}: {bound:.0%}, {entry['stack']} ({entry['basis']}; {entry['source']})",
                 consequence=(f"at {bound:.0%} the run takes {at_bound:,.1f} h, not {hours:,.1f} h, and costs "
                              f"${chosen.cost_usd * mfu / bound:,.0f}, not ${chosen.cost_usd:,.0f}"
                              + (f", past the {deadline:g} h deadline" if deadline and at_bound > deadline else ""))
                 if tripped else "")


def _mlperf(chosen, arch) -> Check | None:
    batches, steps = chosen.detail.get("decode_batches"), chosen.detail.get("decode_step_s")
    if not batches:
        return None
    data = _data()["mlperf"]
    reference = float(data["model_params"])
    params = arch.active_params
    per_gpu = batches[-1] / steps[-1] / chosen.gpus  # output tokens/s per GPU at the replica's largest batch
    mine = [e for e in data["entries"] if e["device"] == chosen.device.id]
    if mine:
        e = max(mine, key=lambda e: e["tokens_per_s"] / e["gpus"])
        bound = e["tokens_per_s"] / e["gpus"] * reference / params
        basis = (f"MLPerf Inference {e['round']} Llama 2 70B Offline on {e['device']}: "
                 f"{e['tokens_per_s'] / e['gpus']:,.0f} tokens/s per GPU ({e['precision']}), × 69.0B / "
                 f"{params / 1e9:,.1f}B parameters ({e['source']})")
    else:
        peak = chosen.device.peak_flops_per_s.get("bf16") or chosen.device.peak_flops_per_s.get("fp16")
        if not peak:
            return None
        best = max(data["entries"], key=lambda e: _per_flop(e, reference))
        bound = _per_flop(best, reference) * peak / params
        basis = (f"derived: the best MLPerf Inference ({best['round']}, {best['device']}) parameter-tokens per "
                 f"second per dense bf16 FLOP/s × {chosen.device.id}'s {peak / 1e12:,.0f} TFLOP/s ÷ "
                 f"{params / 1e9:,.1f}B parameters")
    tripped = per_gpu > bound
    return Check(name="output tokens/s per GPU at the largest batch", predicted=per_gpu, bound=bound,
                 unit="tokens/s", tripped=tripped, basis=basis,
                 consequence=f"at the bound a replica needs ×{per_gpu / bound:.2f} the time per token" if tripped
                 else "")


def _per_flop(entry: dict[str, Any], reference: float) -> float:
    from sizeup.hardware.catalog import load_catalog

    device = load_catalog(include_user=False).devices.get(entry["device"])
    peak = device.peak_flops_per_s.get("bf16") if device is not None else None
    return entry["tokens_per_s"] / entry["gpus"] * reference / peak if peak else 0.0
