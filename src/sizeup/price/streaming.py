"""What a step of many tokens pays beyond max(weight read, compute): matrix products near their ridge point.

A server's step multiplies every weight matrix by the step's M tokens (its decodes and the prompt tokens it
carries). Per op the roofline (price/roofline.py) takes max(read, compute): the weights stream in while the
tensor cores work on what arrived. Measured linear layers overlap the two only in part where they are of a size:
with r = compute / read, they take about max + 0.3 x read at r 0.6-0.8, + 0.5-0.7 x read at r 1.2-5, the excess
fading to none by r 27 and under 0.1 x read below r 0.45 (data/efficiency/streaming.yaml, with its source:
measured H100 / A100 profiles of Llama-2-70B's linear layers). A loaded server's steps (hundreds to low thousands
of tokens) sit there; single-sequence decode and long prefills keep their price.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from functools import lru_cache

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import builtin_data_dir, read_yaml
from sizeup.ranges import check_sourced

__all__ = ["compute_batch", "weight_read", "excess", "read_terms", "read_growth", "step_excess", "joined", "note"]

CORNERS = ("low", "typical", "high")


@lru_cache(maxsize=1)
def _curve() -> tuple[list[float], dict[str, list[float]], str]:
    path = builtin_data_dir() / "efficiency" / "streaming.yaml"
    data = read_yaml(path)
    entry = data.get("excess_over_max") if isinstance(data, dict) else None
    if not isinstance(entry, dict) or set(data) != {"excess_over_max"}:
        raise CatalogError(f"{path}: expected exactly one field 'excess_over_max'")
    check_sourced(entry, path, "excess_over_max", {"compute_to_read", *CORNERS, "basis", "source", "retrieved"})
    try:
        ratios = [float(r) for r in entry["compute_to_read"]]
        values = {c: [float(v) for v in entry[c]] for c in CORNERS}
    except (KeyError, TypeError, ValueError):
        raise CatalogError(f"{path}: excess_over_max needs lists of numbers compute_to_read, low, typical, high")
    if (any(b <= a for a, b in zip(ratios, ratios[1:])) or not ratios or ratios[0] <= 0
            or any(len(v) != len(ratios) for v in values.values())
            or any(not 0 <= lo <= ty <= hi for lo, ty, hi in zip(*values.values()))):
        raise CatalogError(f"{path}: excess_over_max: compute_to_read must rise from above 0, each corner one "
                           f"value per ratio with 0 <= low <= typical <= high")
    return ratios, values, f"{entry['source']} (read {entry['retrieved']})"


def compute_batch(prompt: int) -> int:
    """How many prompts of `prompt` tokens one prefill takes to be compute-bound (at least 16 and 4,096 tokens):
    its time per token is a step's compute per token (C = tokens x that)."""
    return max(16, math.ceil(4096 / max(prompt, 1)))


def weight_read(device, weights_bytes: float, arch, step_s: float) -> float:
    """R of one token: the weights one token reads (all of a dense model's per GPU; of a mixture of experts its
    active share) at `device`'s bandwidth and its kind's typical memory efficiency (price/efficiency.py), at most
    `step_s`, the single-sequence decode step, which also holds what is no weight read at M in the hundreds: an
    engine's M = 1 kernels' shortfall in bandwidth, host and launch time."""
    from sizeup.price.efficiency import device_efficiency

    bandwidth = device.memory_bandwidth_bytes_per_s * device_efficiency(device).memory.typical
    if bandwidth <= 0 or weights_bytes <= 0:
        return step_s
    share = arch.active_params / max(arch.params, 1) if arch.is_moe else 1.0
    return min(step_s, weights_bytes * share / bandwidth)


def excess(read_s: float, compute_s: float, corner: str) -> float:
    """Seconds a matrix product with weight read `read_s` and compute `compute_s` takes beyond max of the two, at
    the `corner` ('low' / 'typical' / 'high') of the measured curve; 0 where either is 0."""
    if read_s <= 0 or compute_s <= 0:
        return 0.0
    ratios, values, _ = _curve()
    ys, r = values[corner], compute_s / read_s
    if r <= ratios[0]:
        return read_s * ys[0] * r / ratios[0]
    if r >= ratios[-1]:
        return 0.0
    j = bisect_right(ratios, r) - 1
    t = math.log(r / ratios[j]) / math.log(ratios[j + 1] / ratios[j])
    return read_s * (ys[j] + (ys[j + 1] - ys[j]) * t)


def read_terms(arch) -> tuple[float, float, float]:
    """(the parameters outside the routed experts, every routed expert's, both over those one token reads; the
    share k / E of the experts a token is routed to) of an ingest.arch.ModelArch: (1, 0, 0) for a dense model."""
    return _terms(arch) if arch is not None and arch.is_moe else (1.0, 0.0, 0.0)


@lru_cache(maxsize=32)
def _terms(arch) -> tuple[float, float, float]:
    mlp = next(layer.mlp for layer in arch.layers if layer.mlp.is_moe)
    total, active, share = arch.params, max(arch.active_params, 1), mlp.top_k / mlp.experts
    experts = (total - active) / (1 - share) if share < 1 else 0.0
    return (total - experts) / active, experts / active, share


def read_growth(terms: tuple[float, float, float], tokens: float) -> float:
    """The weights a step of `tokens` tokens reads over those one token reads (`terms`: `read_terms`): a mixture of
    experts reads each routed expert some token chose, the expected distinct ones under uniform routing
    (E (1 - (1 - k / E)^tokens) of E, as ingest/transformer_ops.py prices an MoE layer's weight read)."""
    dense, experts, share = terms
    if experts <= 0 or tokens <= 1:
        return 1.0
    return dense + experts * (1 - (1 - share) ** tokens)


def step_excess(read_s: float, per_token_s: float, decodes: float, prompt_tokens: float, lump: float,
                corner: str, terms: tuple[float, float, float] = (1.0, 0.0, 0.0)) -> float:
    """The mean `excess` of a server's step of `decodes` sequences that carries `prompt_tokens` prompt tokens a step
    on average, in lumps of `lump` tokens (a whole prompt, or its chunk where a step's token budget is smaller):
    fewer than a lump a step means that share of the steps carries one lump and the others none, so a light load's
    rare prompts are priced in the step that runs them rather than spread thinly over every step. `read_s`: one
    token's weight read, grown to the step's tokens by `read_growth(terms, ...)`; `per_token_s`: one token's
    compute."""
    def at(tokens: float) -> float:
        return excess(read_s * read_growth(terms, tokens), tokens * per_token_s, corner)

    share = min(prompt_tokens / lump, 1.0) if prompt_tokens > 0 and lump > 0 else 0.0
    plain = at(decodes)
    return plain if share == 0.0 else (1 - share) * plain + share * at(decodes + max(prompt_tokens, lump))


def joined(read_s: float, per_token_s: float, decodes: float, rows: float,
           terms: tuple[float, float, float] = (1.0, 0.0, 0.0), kernel_s: float = 0.0) -> float:
    """What the prompt tokens riding in a server's decode step of `decodes` sequences add to it, the step running
    one GEMM per weight matrix over all its `rows` rows M (decodes and prompt tokens): max(R(M), M x c) in place of
    max(R(decodes), decodes x c), R(n) = `read_s` x `read_growth(terms, n)` the weights n tokens read (read once a
    step, however its rows divide), c = `per_token_s` a token's compute at M's kernel, plus `kernel_s`: what the
    decodes' own GEMMs take more at M's kernel than at theirs. The one formula of a mixed step, for the estimate
    (workload/serving_steps.py `Steps.joined`) and the planner (plan/capacity.py)."""
    gemms = [max(read_s * read_growth(terms, n), n * per_token_s) for n in (decodes, rows)]
    return kernel_s + gemms[1] - gemms[0]


def note() -> str:
    """The assumption line an estimate under load states."""
    return ("a step of M tokens whose compute C is near its weight read R takes more than max(R, C): measured "
            "linear layers overlap the two only in part (about + 0.3 R at C = 0.7 R, + 0.5-0.7 R at C = 1.2-5 R, "
            f"none past 27 R), a measured curve: {_curve()[2]}; price/streaming.py")
