"""The efficiencies one phase of an engine prices at, from its execution model (engines/base.py).

The device kind's fractions of peak (or a calibration's) with, from the execution model: the host time per kernel
it reaches at this phase, and, for an uncalibrated device, the matrix kernel it really runs: its fraction of its own
peak (int8 tensor, fp16 tensor, fp16 accumulate, int32 ALU) turned into the fraction of each precision's peak the
ledger's matmuls are priced at, and its share of the memory bandwidth. The result is cached on the execution model,
which an estimate resolves once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sizeup.hardware.schema import DeviceSpec
from sizeup.formats import WeightFormat
from sizeup.price.efficiency import GROUPED, Efficiency, device_efficiency
from sizeup.ranges import Range

__all__ = ["phase_efficiency", "kernel_matmul", "phase_note", "expert_rows", "derived_text"]

DERIVED_CHARS = 120
"""The longest derived text a kernel's note carries (past it, cut at a word and marked '...')."""


def phase_efficiency(model, decode: bool, weights: WeightFormat, tokens: int | None = None,
                     expert_rows: float | None = None, kernel_tokens: int | None = None) -> Efficiency:
    """The efficiency of one phase of `model` (an ExecutionModel) on its device: its host time per kernel, and at
    an uncalibrated device the matmul fraction of the kernel it runs (`tokens` in the step, default 1 at decode and
    512 at prefill) and of a MoE layer's grouped GEMM (`expert_rows`: the rows each routed expert gets in the step,
    tokens x top-k / experts; None: a dense model). `kernel_tokens`: the rows of the GEMMs where they are more
    than the phase's own tokens (a server's mixed step runs its decodes and prompt tokens through one GEMM per
    weight matrix: the kernel is chosen at their sum; the host time per kernel stays the phase's)."""
    eff = device_efficiency(model.device)
    key = (decode, weights.id, tokens, expert_rows, kernel_tokens, id(eff))
    cached = model.memo.get(key)
    if cached is not None and cached[0] is eff:
        return cached[1]
    result = _phase_efficiency(model, eff, decode, weights, tokens, expert_rows, kernel_tokens)
    model.memo[key] = (eff, result)
    return result


def expert_rows(arch, tokens: int) -> float | None:
    """The rows each routed expert of `arch`'s MoE layers gets in a step of `tokens` tokens (tokens x top-k /
    experts, the M of each expert's GEMM when the routing spreads evenly; the first MoE layer's), None: no MoE."""
    got = _FIRST_MOE.get(id(arch))
    if got is None or got[0] is not arch:  # an arch is frozen (a tuple of frozen layers): its first MoE MLP, once
        if len(_FIRST_MOE) >= 64:
            _FIRST_MOE.clear()
        got = _FIRST_MOE[id(arch)] = (arch, next((layer.mlp for layer in arch.layers if layer.mlp.is_moe), None))
    mlp = got[1]
    return None if mlp is None else tokens * mlp.top_k / mlp.experts


_FIRST_MOE: dict[int, tuple] = {}
"""expert_rows's first MoE MLP by the arch's id (the arch kept beside it, so its id is not reused while kept): a plan
asks ~10^4 times, each a walk over every layer of a dense model."""


def _phase_efficiency(model, eff: Efficiency, decode: bool, weights: WeightFormat, tokens: int | None,
                      rows: float | None, kernel_tokens: int | None = None) -> Efficiency:
    device = model.device
    if device.kind == "cpu":
        return eff
    changes: dict[str, Any] = {}
    overhead = model.per_op_overhead(decode, tokens)
    if overhead is not None:
        changes["overhead_s"] = overhead
    if eff.origin.startswith("defaults"):  # a calibrated profile measured the device's own kernels: keep it
        tokens = kernel_tokens or tokens or (1 if decode else 512)
        kernel = model.matrix_kernel(weights.id, decode, tokens)
        tensor = kernel_matmul(device, kernel)
        if tensor is not None:
            changes["tensor"] = {**eff.tensor, **tensor}
        if kernel is not None and kernel.memory is not None:
            changes["memory"] = kernel.memory
        if kernel is not None and kernel.vector is not None:
            changes["vector"] = kernel.vector
        if kernel is not None and (tensor is not None or kernel.memory is not None or kernel.vector is not None):
            changes["origin"] = f"{eff.origin}, {model.name} {kernel.name} kernel ({kernel.table})"
            model.memo[("kernel", decode, weights.id, tokens)] = kernel
        moe = model.moe_kernel(weights.id, decode, tokens, rows) if rows is not None else None  # no MoE layer: none
        if moe is not None:  # the experts' grouped GEMM: its own share of the peak its precision runs at, and of BW
            if moe.fraction is not None:
                changes["tensor"] = {**changes.get("tensor", eff.tensor), GROUPED: moe.fraction}
            if moe.memory is not None:
                changes["grouped_memory"] = moe.memory
            changes["origin"] = f"{changes.get('origin', eff.origin)}, {model.name} {moe.name} ({moe.table})"
            model.memo[("moe", decode, weights.id, tokens)] = moe
        attention = model.decode_attention_memory() if decode else None
        if attention is not None:  # the KV-cache read at the engine's decode attention kernel's share of the bandwidth
            changes["attention_memory"] = attention
    changes.setdefault("origin", f"{eff.origin}, {model.name} {'decode' if decode else 'prefill'}")
    return replace(eff, **changes) if len(changes) > 1 else eff


def kernel_matmul(device: DeviceSpec, kernel) -> dict[str, Range] | None:
    """Matmul fractions, per precision the ledger may price at, implied by `kernel` (None: no kernel, or no fraction
    or peak for it on this device)."""
    if kernel is None or kernel.fraction is None:
        return None
    from sizeup.engines.kernels import NATIVE_PEAKS, kernel_peak  # only where the engine runs a kernel of its table

    peak = kernel_peak(device, kernel)
    if not peak:
        return None
    if kernel.peak in NATIVE_PEAKS:  # a GEMM on that precision's own units: its matmuls only, the rest unchanged
        return {f"matmul@{kernel.peak}": kernel.fraction}
    out = {f"matmul@{p}": kernel.fraction.scale(peak / v) for p, v in device.peak_flops_per_s.items() if v}
    out["matmul"] = kernel.fraction.scale(peak / (device.peak_flops_per_s.get("fp16") or peak))
    return out


def phase_note(model, eff: Efficiency, weights: WeightFormat, decode: bool, tokens: int | None = None,
               moe: bool = False) -> str | None:
    """The assumption that says which kernel priced the phase (phase_efficiency at the same `tokens` chose it), or
    why none did (the engine's own note), and, for a mixture-of-experts model (`moe`), which grouped GEMM priced its
    experts."""
    phase = "decode" if decode else "prefill"
    tokens = tokens or (1 if decode else 512)
    kernel = model.memo.get(("kernel", decode, weights.id, tokens))
    if kernel is not None:
        from sizeup.engines.kernels import NATIVE_PEAKS

        native = kernel.peak in NATIVE_PEAKS and f"matmul@{kernel.peak}" in eff.tensor
        key, peak = (f"matmul@{kernel.peak}", kernel.peak) if native else ("matmul", "fp16")
        note = (f"{phase} priced with {eff.origin.rsplit(', ', 1)[-1]}: matmul at {eff.tensor[key].typical:.0%} "
                f"of the {peak} peak, memory at {eff.memory.typical:.0%} of peak bandwidth")
        if (derived := derived_text(kernel.basis)) is not None:
            note = f"{note} {derived}"
    else:
        note = model.missing_kernel_note(weights.id, decode)
    moe = model.memo.get(("moe", decode, weights.id, tokens)) if moe else None
    if moe is None:
        return note
    parts = ([f"{moe.fraction.typical:.0%} of the peak its {weights.id} products run at"] if moe.fraction else []) \
        + ([f"expert weights streamed at {moe.memory.typical:.0%} of peak bandwidth"] if moe.memory else [])
    said = (f"{phase}: the MoE experts run {model.label}'s {moe.description}: {', '.join(parts)} "
            f"({moe.basis})")
    return said if note is None else f"{note}; {said}"


def _close(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one opened at `start` (the text's end if none does)."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return len(text)


def _top_level_cut(text: str, stops: tuple[str, ...] = ("; ", ". ")) -> str:
    """`text` up to its first `stops` outside parentheses."""
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and any(text.startswith(s, i) for s in stops):
            return text[:i]
    return text


def derived_text(basis: str) -> str | None:
    """'(derived: WHAT)' where a kernel's `basis` says one of its figures is derived (the word 'derived' in any
    case), so the estimate's note shows it; None where it does not. WHAT, at most DERIVED_CHARS characters: the
    basis's own '(derived: ...)' parentheses, joined; else the text after a 'derived:' marker, to its first '; '
    or '. '; else, for a bare 'derived' marker (its last occurrence), the parenthesis that holds it less the
    marker, or the basis before a parenthesis or clause that is only the marker ('as rdna3 (derived)')."""
    low = basis.lower()
    said, at = [], low.find("(derived:")
    while at >= 0:
        end = _close(basis, at)
        said.append(basis[at + len("(derived:"):end - 1].strip())
        at = low.find("(derived:", end)
    if said:
        what = "; ".join(said)
    elif (at := low.find("derived:")) >= 0:
        what = _top_level_cut(basis[at + len("derived:"):])
    elif (at := low.rfind("derived")) >= 0:  # the last one: a marker ends the clause it qualifies
        unmarked = basis[:at] + basis[at + len("derived"):]
        opened = basis.rfind("(", 0, at)
        inside = opened >= 0 and _close(basis, opened) > at
        if inside and not basis[opened + 1:at].strip():
            what = basis[:opened]
        elif inside:
            what = unmarked[opened + 1:_close(basis, opened) - 1 - len("derived")]
        else:
            what = unmarked
    else:
        return None
    what = " ".join(what.split()).strip(" ;,.:")
    if len(what) > DERIVED_CHARS:
        what = what[:DERIVED_CHARS - 3].rsplit(" ", 1)[0].rstrip(" ;,.:") + "..."
    return f"(derived: {what})" if what else "(derived)"
