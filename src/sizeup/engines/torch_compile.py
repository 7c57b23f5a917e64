"""torch.compile decoding, gpt-fast style (data/engines/torch-compile.yaml): transformers'
`generate(cache_implementation="static")` or gpt-fast / torchao's generate.py with `torch.compile(mode=
"reduce-overhead")`.

A static KV cache (allocated for the whole `prompt + output` up front) keeps every decode step's shapes fixed, so
inductor compiles the step once, fuses its elementwise work into few Triton kernels and captures it as a CUDA graph:
a decode step is one graph launch (`step_overhead_s`) whose kernels replay back to back (`decode_overhead_s` each).
What decides a batch-1 step is then how much of the memory bandwidth the weight-streaming kernels reach, per weight
format: cuBLAS GEMV or an inductor GEMV on bf16 weights, an inductor-fused dequantize-multiply for torchao's int8 /
fp8 weight-only weights, tinygemm (`_weight_int4pack_mm`) for int4 weight-only (`decode_memory_fraction.*`, fitted
on the tuned rows only, per memory class). Prefill runs eager unless the run compiled it (gpt-fast
`--compile_prefill`); a prompt of a few tokens costs well under a millisecond either way. Compile and warm-up time
(`compile_s`) is paid once per process, before the first token, and is stated apart, never folded into a phase.
"""

from __future__ import annotations

import statistics

from sizeup.engines.base import Batching, ExecutionModel, engine
from sizeup.engines.kernels import Kernel, memory_class
from sizeup.ingest.arch import ModelArch
from sizeup.ranges import Range

_WEIGHT_ONLY = {"int8-wo": "weight_only", "fp8-wo": "weight_only",
                **{f"int4-wo-g{g}": "int4" for g in (32, 64, 128, 256)}}
"""Format -> kernel class of the decode matmul: torchao's int8/fp8 weight-only (inductor fuses the dequantization
into the GEMV it generates) and int4 (tinygemm's packed-int4 kernel); every other format: 16-bit GEMV."""

@engine("torch-compile", "torch.compile", "gpt-fast", "torchao", "torchcompile", "torch_compile")
class TorchCompile(ExecutionModel):
    FORMATS = ("bf16", "fp8-wo", "int8-wo", "int4-wo-g64")
    FORMAT_NAMES = {
        "int4": ("int4-wo-g32", "gpt-fast quantize.py --mode int4: int4 weight-only, tinygemm layout, --groupsize "
                                "default 32"),
        "int4gptq": ("int4-wo-g32", "gpt-fast --mode int4-gptq: the int4 weight-only layout, GPTQ-chosen values"),
        **{f"int4g{g}": (f"int4-wo-g{g}", f"gpt-fast's model_int4.g{g}.pth") for g in (32, 64, 128, 256)},
        "int8": ("int8-wo", "gpt-fast --mode int8: int8 weights with a per-channel scale, dequantized into the "
                            "compiled GEMV (the weights' bytes are int8)"),
        "fp8": ("fp8-wo", "torchao float8 weight-only (generate.py --quantization float8wo)"),
    }

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        """At decode on a GPU the weight-streaming kernel of the format, with the fraction of the bandwidth it
        reaches on this device (`_fraction`: its architecture, else its memory class, else the other class)."""
        if not decode or self.device.kind != "gpu":
            return None
        kind = _WEIGHT_ONLY.get(weights, "16bit")
        mem = memory_class(self.device) or "hbm"
        fraction, key, derived = self._fraction(kind, mem)
        if kind == "int4":
            fraction, derived = self._tinygemm(weights, mem)
        if fraction is None:
            return None
        name = {"16bit": "gemv-16bit", "weight_only": "gemv-weight-only", "int4": "tinygemm-int4"}[kind]
        return Kernel(self.NAME, name, f"torch.compile decode GEMV ({kind})", "device-default", None,
                      f"{key}{derived}", "data/engines/torch-compile.yaml",
                      memory=fraction, table="data/engines/torch-compile.yaml")

    def _fraction(self, kind: str, mem: str) -> tuple[Range | None, str, str]:
        """The share of the peak bandwidth a decode step of kernel class `kind` reaches, the key it was read from and
        what was derived. The share depends on the device, not only its memory class: an A100 and an H100 run the
        same compiled kernels at different shares of their bandwidth (the H100 moves 1.64x the bytes per second with
        1.22x the SMs). So: `decode_memory_fraction.KIND.MEM@ARCH` where a tuned row on the architecture set one;
        for the 16-bit GEMV without one, the class's one 16-bit figure (`16bit.MEM@FIT`, fit on a tuned row on
        architecture FIT) scaled by the ratio of the weight-only shares of this architecture and FIT
        (`_scaled_16bit`); else the class figure, or the median of the class's entries per architecture (`_pooled`);
        else the other class's (said in the basis)."""
        base, arch = f"decode_memory_fraction.{kind}", self.device.architecture or ""
        if (fraction := self.profile.range(f"{base}.{mem}@{arch}")) is not None:
            return fraction, f"{base}.{mem}@{arch}", ""
        if kind == "16bit" and (scaled := self._scaled_16bit(mem, arch)) is not None:
            return scaled
        for other in (mem, *(c for c in ("hbm", "gddr") if c != mem)):
            found = self.profile.range(f"{base}.{other}")
            found = (found, f"{base}.{other}", "") if found is not None else self._pooled(f"{base}.{other}@")
            if found is not None:
                return found if other == mem else (found[0], found[1], f"{found[2]} (derived: no tuned row on "
                                                                      f"{mem or 'this memory'}, the {other} figure)")
        return None, f"{base}.{mem}", ""

    def _pooled(self, prefix: str) -> tuple[Range, str, str] | None:
        """Where the class has entries only per architecture (`PREFIX<arch>`): their median, low and high their
        extremes (derived, said in the basis); None where it has none."""
        entries = {k.removeprefix(prefix): self.profile.range(k) for k in self.profile.ranges if k.startswith(prefix)}
        entries = {a: r for a, r in entries.items() if r is not None}
        if not entries:
            return None
        typical = statistics.median(r.typical for r in entries.values())
        fraction = Range(min(r.low for r in entries.values()), typical, max(r.high for r in entries.values()))
        return (fraction, prefix.rstrip("@"),
                f" (derived: no entry for {self.device.architecture or 'this architecture'}, the median of "
                f"{', '.join(sorted(entries))})")

    def _scaled_16bit(self, mem: str, arch: str) -> tuple[Range, str, str] | None:
        """The 16-bit share on `arch`, derived: the class's one 16-bit figure (`16bit.MEM@FIT`, its tuned row ran on
        architecture FIT) times weight_only@arch / weight_only@FIT, both set by tuned rows; None where any is
        missing, the class has more than one 16-bit figure, or `arch` is FIT."""
        prefix, wo = f"decode_memory_fraction.16bit.{mem}@", "decode_memory_fraction.weight_only"
        fitted = [k for k in self.profile.ranges if k.startswith(prefix)]
        if len(fitted) != 1:
            return None
        fit_arch = fitted[0].removeprefix(prefix)
        base, here, there = (self.profile.range(fitted[0]), self.profile.range(f"{wo}.{mem}@{arch}"),
                             self.profile.range(f"{wo}.{mem}@{fit_arch}"))
        if arch == fit_arch or base is None or here is None or there is None or not there.typical:
            return None
        ratio = here.typical / there.typical
        return (base.scale(ratio), fitted[0],
                f" (derived: the {fit_arch} figure x {ratio:.3f}, the weight-only step's share on {arch} over "
                f"{fit_arch}, {wo}.{mem}@{arch} / @{fit_arch})")

    def _tinygemm(self, weights: str, mem: str) -> tuple[Range | None, str]:
        """tinygemm's batch-1 int4 kernel streams weights at a rate per SM (`tinygemm_weights_per_sm_s`, the SM
        count times it, in bytes of the format) or at the 16-bit GEMV's fraction of the bandwidth, whichever is
        less: as a fraction of the device's bandwidth."""
        from sizeup.formats import get_format

        rate, cap = self.profile.range("tinygemm_weights_per_sm_s"), self._fraction("16bit", mem)[0]
        sms, bandwidth = self.device.compute_units, self.device.memory_bandwidth_bytes_per_s
        if rate is None or cap is None or not sms or not bandwidth:
            return cap, " (derived: no SM count, the 16-bit GEMV's fraction)"
        fmt = get_format(weights)
        per_weight = fmt.bits / 8 + fmt.scale_bytes / max(fmt.group_size, 1)
        f = rate.scale(sms * per_weight / bandwidth)
        fraction = Range(min(f.low, cap.low), min(f.typical, cap.typical), min(f.high, cap.high))
        return fraction, (f" ({rate.typical / 1e9:.1f} G weights/s per SM x {sms} SMs x {per_weight:.3f} B per weight "
                          f"= {f.typical:.2f} of the bandwidth, capped at the 16-bit GEMV's {cap.typical:.2f})")

    def step_overhead(self, arch: ModelArch, decode: bool) -> Range | None:
        """One CUDA-graph launch per decode step (the loop does not sync on the token); prefill runs eager."""
        return self.profile.range("step_overhead_s" if decode else "prefill_step_overhead_s")

    def phase_notes(self, arch: ModelArch, decode: bool) -> tuple[str, ...]:
        compile_s = self.profile.range("compile_s")
        if not decode or compile_s is None:
            return ()
        return (f"{self.NAME}: the decode step is compiled (inductor, mode reduce-overhead) and captured as a CUDA "
                f"graph once per process, before the first token: {compile_s.low:.0f}-{compile_s.high:.0f} s "
                f"(typical {compile_s.typical:.0f} s) of compile and warm-up, not in TTFT or tokens/s",)

    def memory(self, request):
        """What `allocate_on_demand` holds, plus, for a weight-only format, the caching allocator's segments left
        reserved by quantizing on the device: generate.py loads the checkpoint in 16 bits onto the GPU and
        `quantize_` replaces each linear's weight there, so the packed weights are carved out of segments cut for
        16-bit tensors (the loaded weights, the quantization's temporaries); CUDA-graph capture then empties the
        cache (torch.cuda.graph.__enter__), which returns only wholly free segments, so a segment holding a packed
        weight stays reserved whole, and the reported peak is `max_memory_reserved` after it. Priced as
        `quantized_on_device_reserved` (the unused part of those segments per byte of weights) x the weights."""
        from dataclasses import replace

        mem = super().memory(request)
        share = self.profile.range("quantized_on_device_reserved")
        if request.weights.id not in _WEIGHT_ONLY or share is None:
            return mem
        extra = int(share.typical * request.weights_bytes)
        note = (f"{self.NAME}: {request.weights.id} weights are quantized on the GPU after a 16-bit load; the "
                f"segments cut for 16-bit tensors that hold the packed weights stay reserved, +{share.typical:.0%} of "
                f"the weights ({extra / 1e9:.2f} GB, torch.cuda.max_memory_reserved)")
        total = mem.total_bytes + extra
        return replace(mem, overhead_bytes=mem.overhead_bytes + extra, fits=total <= request.usable.typical,
                       notes=(*mem.notes, note))

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="static", basis="generate() runs one batch of prompts with a static cache for "
                                                   "prompt + output tokens")
