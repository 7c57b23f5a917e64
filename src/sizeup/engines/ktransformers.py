"""KTransformers 0.4+ (data/engines/ktransformers.yaml): kt-kernel's CPU MoE kernels inside SGLang. Attention,
dense layers, shared experts, the router and the KV cache run on the GPU under SGLang's scheduler and memory pool
(engines/sglang.py, at the SGLang release the yaml's `sglang_release` names); the routed experts of every MoE layer
stay in host memory and run on the host CPU (`--cpu`, `--threads` for `--kt-cpuinfer`), except the
`--kt-num-gpu-experts N` experts per layer kept on the GPU (`--engine-opt kt-num-gpu-experts=N`).

Pricing reuses the expert offload of llama.cpp's `--n-cpu-moe` (workload/offload.py, price/memory.py): every MoE
layer's experts are host experts (`host_expert_layers`), a share (E - N) / E of each held and read on the host
(`host_expert_fraction`), the CPU's kernels those of its catalog entry (AMX where it has it, else its AVX-512 or
AVX2 rate, data/efficiency/cpu.yaml). A token is taken to be routed to the GPU-held experts in proportion to their
count (uniform routing): kt-kernel's choice of which experts stay on the GPU is not modelled (an assumption line).
"""

from __future__ import annotations

from dataclasses import replace

from sizeup.engines.base import engine
from sizeup.engines.profile import engine_profile
from sizeup.engines.sglang import SGLang
from sizeup.errors import ConfigError


@engine("ktransformers", "kt", "kt-kernel")
class KTransformers(SGLang):
    FORMATS = ("bf16", "fp8")
    OPTIONS = frozenset({"threads"})
    ENGINE_OPTIONS = {**SGLang.ENGINE_OPTIONS, "kt-num-gpu-experts": "kt_num_gpu_experts",
                      "kt-gpu-prefill-token-threshold": "kt_gpu_prefill_token_threshold"}
    SGLANG_RELEASE = "0.5.3"
    """The SGLang release whose profile prices the GPU part of every ktransformers 0.4+ release. ktransformers 0.4+
    runs it inside SGLang (kt-kernel README "Integration with SGLang": `python -m sglang.launch_server ...
    --kt-weight-path --kt-cpuinfer --kt-num-gpu-experts --kt-method`; README "Oct 10, 2025: Integrating into SGLang";
    lmsys.org/blog/2025-10-22-KTransformers; read 2026-12-06). Assumption: the release its SGLang fork is cut from
    is not read; taken as 0.5.3, the first with the current server_args memory settings (sglang PR 10975, merged
    2025-09-27, before the integration). The estimate prints it (`phase_notes`)."""

    @classmethod
    def profile_at(cls, version):
        """SGLang's profile at the release ktransformers' `sglang_release` names, ktransformers' settings over it, its
        own releases and version."""
        own = engine_profile(cls.NAME, version)
        base = engine_profile("sglang", cls.SGLANG_RELEASE)
        return replace(base, id=own.id, description=own.description, version=own.version,
                       values={**base.values, **own.values}, ranges={**base.ranges, **own.ranges},
                       sources=(*base.sources, *own.sources), versions=own.versions,
                       notes=(*own.notes, f"ktransformers {own.version}: the GPU part priced as SGLang {base.version} (its "
                                          f"scheduler, memory pool and CUDA graphs; the release ktransformers' SGLang "
                                          f"fork is cut from is not read)"))

    def gpu_experts(self, arch) -> int:
        """`--kt-num-gpu-experts N`: routed experts per MoE layer kept on the GPU (0 by default)."""
        n = self.profile.value("kt_num_gpu_experts", 0)
        if n < 0 or n != int(n):
            raise ConfigError(f"--engine-opt kt-num-gpu-experts={n:g}: expected a whole number of experts per "
                              f"layer, 0 or more")
        experts = _routed_experts(arch)
        if experts and n > experts:
            raise ConfigError(f"--engine-opt kt-num-gpu-experts={int(n)}: the model has {experts} routed experts per "
                              f"layer")
        return int(n)

    def host_expert_layers(self, arch) -> int:
        """Every MoE layer's routed experts are kt-kernel's (all of them host experts but for the GPU-held share)."""
        if not arch.is_moe:
            raise ConfigError(f"--engine ktransformers: {arch.name} has no routed experts, and ktransformers runs a "
                              f"mixture-of-experts model's experts on the CPU (expected a MoE model; a dense model: "
                              f"--engine sglang)")
        experts = _routed_experts(arch)
        return arch.num_layers if self.gpu_experts(arch) < experts else 0

    def host_expert_fraction(self, arch) -> float:
        """The share of each host-expert layer's routed experts held and run on the CPU: (E - N) / E."""
        experts = _routed_experts(arch)
        return (experts - self.gpu_experts(arch)) / experts if experts else 1.0

    def prefill_threshold(self) -> int:
        """`--kt-gpu-prefill-token-threshold N` (`--engine-opt`): a prefill of N tokens or more runs the host experts
        on the GPU, layer by layer, after copying them there (0: off, every prefill on the CPU)."""
        n = self.profile.value("kt_gpu_prefill_token_threshold", 0)
        if n < 0 or n != int(n):
            raise ConfigError(f"--engine-opt kt-gpu-prefill-token-threshold={n:g}: expected a whole number of "
                              f"tokens, 0 (off) or more")
        return int(n)

    def host_weights_on_device(self, decode: bool, tokens: int) -> bool:
        threshold = self.prefill_threshold()
        return not decode and threshold > 0 and tokens >= threshold

    def step_extra(self, arch, ledger, weights: str, decode: bool, tokens: int):
        """A prefill past the threshold: each chunk (`chunked_prefill_size`) copies every CPU-held expert over the
        host link before the GPU multiplies it (kt-kernel's layerwise prefill; their bytes / the link's one-way
        bandwidth, the copy not overlapped with compute: an upper bound)."""
        layers = self.host_expert_layers(arch) if self.device.kind != "cpu" else 0
        link = self.device.pcie_bytes_per_s
        if not layers or not link or not self.host_weights_on_device(decode, tokens):
            return super().step_extra(arch, ledger, weights, decode, tokens)
        from sizeup.engines.host_experts import expert_copies
        from sizeup.ranges import Range

        chunk = self._chunk()
        moved, t, copies = expert_copies(arch, weights, layers, self.host_expert_fraction(arch), tokens, chunk, link)
        return Range(t, t, t), (f"prefill: {tokens:,} tokens >= kt-gpu-prefill-token-threshold "
                                f"{self.prefill_threshold():,}: {copies} chunk(s) of up to {chunk:,} tokens each copy "
                                f"the {moved / 2**30:.2f} GiB of CPU-held experts to {self.device.id} over its host "
                                f"link ({link / 1e9:.1f} GB/s one way) and multiply them there: {t * 1e3:,.0f} ms")

    def phase_notes(self, arch, decode: bool):
        n = self.gpu_experts(arch) if arch.is_moe else 0
        threads = self.profile.value("kt_cpuinfer_default", 0)
        return (*super().phase_notes(arch, decode),
                f"tokens are taken as routed uniformly, so the {n} GPU-held experts per layer (--kt-num-gpu-experts) "
                f"take their count's share of a token's expert reads; kt-kernel's choice of hot experts not modelled",
                f"the CPU experts are priced at the host CPU's catalog rate for its best ISA (AMX, else AVX-512, "
                f"else AVX2) and memory bandwidth; without --threads every core is priced (kt-cpuinfer's documented "
                f"recommendation is the physical cores less {threads:g} per GPU)")


def _routed_experts(arch) -> int:
    """Routed experts per MoE layer (the largest count of any layer; 0 on a dense model)."""
    return max((layer.mlp.experts for layer in arch.layers if layer.mlp and layer.mlp.experts), default=0)
