"""llama.cpp (data/engines/llama.cpp.yaml; its matrix kernels: data/efficiency/kernels.yaml).

Prefill and batch-1 decode run the kernel llama.cpp really runs per format, architecture and build backend (MMQ,
cuBLAS, MMVQ with its dequantization as integer-ALU work, HIP, SYCL, Vulkan: engines/kernels.py), an older build
(`llama.cpp@2024-06-01`, or `build_date`) the kernels it ran then. Memory: the KV cache allocated for the whole
context, a compute buffer for one physical batch (`n_ubatch`), the layers not offloaded (`gpu_layers`) in CPU RAM,
priced on the host CPU. The graph is replayed as a CUDA graph, so a kernel costs the device's generic per-op time;
the host's work per token (graph build, sampling) is `step_overhead_s`. A decode step the build replays as a CUDA
graph (`graph_replays`: from PR 6766, 2024-05-08, on NVIDIA GPUs of the build's minimum compute capability, one
sequence until 2026-02-15, MoE models from then) costs `graph_op_s` per kernel; any other step the device's
launch cost.
"""

from __future__ import annotations

import re
from dataclasses import replace

from sizeup.engines.base import Batching, ExecutionModel, engine
from sizeup.engines.host_experts import expert_copies
from sizeup.engines.kernels import check_backend, default_backend, select_kernel
from sizeup.engines.launch import Launch, LaunchRequest
from sizeup.engines.llama_cpp_host_kv import host_kv_memory, host_kv_step
from sizeup.engines.llama_cpp_memory import compute_buffer, fit_params, flash_attention_default, input_layer_bytes
from sizeup.engines.reserve import whole_context_cache
from sizeup.errors import ConfigError
from sizeup.ingest.transformer_ops import KV_BYTES_PER_ELEMENT
from sizeup.ranges import Range

TOWER_ATTENTION = (False, "ggml's K·Qᵀ and softmax as tensors, as without flash attention: an upper bound", 0)


@engine("llama.cpp", "llamacpp")
class LlamaCpp(ExecutionModel):
    FORMATS = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k")
    OPTIONS = frozenset({"gpu_layers", "threads", "backend", "build_date"})
    LOADS = ("gguf", "plain", "mxfp4")
    CHECKPOINT = "gguf"
    """GGUF files only: its quantized types, F32/F16/BF16, and MXFP4 (gpt-oss's MoE format) (ggml-org/llama.cpp
    tools/quantize `QUANT_OPTIONS`, read 2026-12-05); no AWQ / GPTQ / FP8 / NVFP4 checkpoint is read."""
    ENGINE_OPTIONS = {"fit": "fit", "fit-target": "fit_target_mib", "fit-ctx": "fit_ctx",
                      "n-cpu-moe": "n_cpu_moe", "ncmoe": "n_cpu_moe", "cpu-moe": "cpu_moe", "cmoe": "cpu_moe",
                      "no-kv-offload": "no_kv_offload", "nkvo": "no_kv_offload",
                      "flash-attn": "flash_attn", "fa": "flash_attn", "n-ubatch": "n_ubatch", "ub": "n_ubatch"}
    SWITCHES = frozenset({"fit", "cpu-moe", "cmoe", "no-kv-offload", "nkvo"})
    OPTION_WORDS = {key: {"on": 1.0, "1": 1.0, "true": 1.0, "off": 0.0, "0": 0.0, "false": 0.0, "auto": -1.0}
                    for key in ("flash-attn", "fa")}
    """llama-server / llama-cli's `--fit on` (their default from PR 16653; llama-bench's is off, and so is sizeup's,
    its rows being llama-bench runs), `--fit-target MiB` (the margin left free per device), `--fit-ctx N` (the least
    context it cuts to): engines/llama_cpp_memory.py fit_params. `--n-cpu-moe N` / `--cpu-moe`: the MoE expert
    weights of the first N layers / of every layer stay in CPU RAM (`host_expert_layers`). `--no-kv-offload` (`-nkvo
    1`): the KV cache in host RAM and the attention on the host CPU (engines/llama_cpp_host_kv.py). `-fa on|off|auto`
    (llama-bench `-fa 1|0`; `--engine-opt flash-attn=on`): flash attention, auto being the build's default
    (`flash_attention`). `-ub N` (`--engine-opt n-ubatch=N`): the physical batch (`ubatch`)."""
    FORMAT_NAMES = {"mxfp4": ("mxfp4_moe", "a gpt-oss GGUF as ggml-org / bartowski ship it, llama-quantize's "
                              "MXFP4_MOE: the MoE experts MXFP4, the other matrices Q8_0 (src/llama-quant.cpp); "
                              "gpt-oss-20b-MXFP4.gguf 12.1 GB, huggingface.co/bartowski/openai_gpt-oss-20b-GGUF, "
                              "read 2026-12-06")}
    MULTI_GPU = "layers"
    """`--split-mode layer` is llama.cpp's default over several GPUs: "layer (default): split layers and KV across
    GPUs" (ggml-org/llama.cpp common/arg.cpp, `-sm, --split-mode`, read 2026-12-05); `row` is opt-in."""

    @classmethod
    def build(cls, device, version=None, *, backend=None, build_date=None, settings=None) -> ExecutionModel:
        """A release is the date of a build: `llama.cpp@2024-06-01` is `--build-date 2024-06-01`."""
        if version is not None and build_date is not None and version != build_date:
            raise ConfigError(f"--engine llama.cpp@{version} and --build-date {build_date}: name the build once")
        build_date = build_date or version
        check_backend(backend, device)
        model = super().build(device, build_date, backend=backend, build_date=build_date, settings=settings)
        if backend is None:
            return model
        return cls(device=device, profile=model.profile, backend=backend, build_date=build_date, notes=(
            *model.notes, f"llama.cpp built with the {backend} backend (--backend; {device.id}'s default: "
                          f"{default_backend(device)})"))

    @classmethod
    def check_version(cls, version: str) -> None:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", version):
            raise ConfigError(f"--engine llama.cpp@{version}: a llama.cpp release is the date of its build, "
                              f"YYYY-MM-DD (e.g. llama.cpp@2024-06-01)")
        super().check_version(version)

    GRAPH_CC = {"pascal-gp100": 6.0, "pascal-gp10x": 6.1, "volta": 7.0, "turing": 7.5, "ampere-ga100": 8.0,
                "ampere-ga10x": 8.6, "ampere-ga10b": 8.7, "ada": 8.9, "hopper": 9.0, "blackwell-gb100": 10.0,
                "blackwell-thor": 11.0, "blackwell-gb20x": 12.0, "blackwell-gb10": 12.1}
    """CUDA compute capability of each NVIDIA architecture class (data/architectures.yaml ids; NVIDIA's CUDA GPUs
    table, developer.nvidia.com/cuda-gpus): ggml-cuda keys its CUDA-graph gate on it (`cuda_graph_min_cc`)."""

    def as_run(self, arch, tp: int):
        """As base.py, and a MoE model marked (`moe_graph`): ggml-cuda's graph gate treats MUL_MAT_ID apart."""
        model, arch, notes = super().as_run(arch, tp)
        return (model._with_setting("moe_graph", 1.0) if arch.is_moe else model), arch, notes

    def graph_replays(self, tokens: int | None) -> bool:
        """Whether a decode step of `tokens` sequences replays a captured CUDA graph (ggml-cuda.cu
        `ggml_backend_cuda_graph_compute`): a build with graphs (`cuda_graphs`), the CUDA backend on an NVIDIA GPU of
        at least `cuda_graph_min_cc`, at most `cuda_graph_max_batch` sequences (`.moe` for a MoE model: MUL_MAT_ID
        disabled graphs until PR 19645), and no expert weights in CPU RAM (`--n-cpu-moe` disables graphs, PR 18593)."""
        device = self.device
        if not self.profile.value("cuda_graphs", 0) or device.vendor != "nvidia" or device.kind not in ("gpu", "soc"):
            return False
        if (self.backend or default_backend(device)) != "cuda":
            return False
        cc = self.GRAPH_CC.get(device.architecture or "")
        if cc is None or cc < self.profile.value("cuda_graph_min_cc", 8.0):
            return False
        moe = bool(self.profile.value("moe_graph", 0))
        if moe and (self.profile.value("cpu_moe", 0) or self.profile.value("n_cpu_moe", 0)):
            return False
        limit = self.profile.value("cuda_graph_max_batch.moe" if moe else "cuda_graph_max_batch", 1)
        return limit < 0 or (tokens or 1) <= limit

    def per_op_overhead(self, decode: bool, tokens: int | None = None):
        """A decode step replayed as a CUDA graph (`graph_replays`): `graph_op_s` per kernel; any other step (prefill,
        a build or GPU without graphs, a batch past the gate): None, the device's launch cost."""
        return self.profile.range("graph_op_s") if decode and self.graph_replays(tokens) else None

    def extra_launches(self, ledger, fp32: bool, per_op: Range | None = None):
        """A one-token decode of a Gated DeltaNet model (Qwen3-Next) on a build that builds the delta rule from ggml
        ops (`gdn_decode_nodes`: the compute nodes of one mixer as the build's graph makes them; views, reshapes and
        permutes launch nothing): the nodes beyond the ledger's ops of each mixer, each at the per-op time the ledger's
        own ops pay (`per_op`: `graph_op_s` in a replayed CUDA graph, else the device's launch cost). None elsewhere,
        and where the caller names no per-op time."""
        nodes = self.profile.value("gdn_decode_nodes", 0.0)
        if not nodes or per_op is None or self.device.kind == "cpu":
            return None
        rules = [o for o in ledger.ops if o.op == "gated_delta_rule"]  # one per mixer (`count` of them: a ledger
        if not rules:                                                   # may fold layers into `model.layers.*`)
            return None
        mixers, scopes = sum(o.count for o in rules), {o.scope.rsplit(".", 1)[0] for o in rules}
        counted = sum(o.count for o in ledger.ops if o.scope and o.scope.rsplit(".", 1)[0] in scopes)
        extra = nodes * mixers - counted
        if extra <= 0:
            return None
        return per_op.scale(extra), (
            f"{self.NAME}: this build runs each Gated DeltaNet mixer's one-token decode as {nodes:.0f} ggml compute "
            f"nodes (conts, repeats, the delta rule as mul/sum_rows/exp...; data/engines/llama.cpp.yaml "
            f"gdn_decode_nodes) where the ledger counts {counted / mixers:.0f} ops: {extra:,.0f} more "
            f"kernels, +{per_op.typical * extra * 1e3:.2f} ms per step")

    def matrix_kernel(self, weights: str, decode: bool, tokens: int):
        return select_kernel(self.NAME, weights, self.device, decode, tokens, self.build_date, self.backend)

    def missing_kernel_note(self, weights: str, decode: bool) -> str | None:
        if self.backend is None or self.backend == default_backend(self.device):
            return None
        return (f"{'decode' if decode else 'prefill'}: no llama.cpp {self.backend} kernel entry for {weights} on "
                f"{self.device.id} in kernels.yaml: priced at the {self.device.kind} default efficiency (derived, not "
                f"fit on {self.backend} measurements)")

    def flash_attention(self) -> bool:
        """Whether flash attention runs: `--engine-opt flash-attn=on|off` (llama.cpp's `-fa`), else (and for `auto`)
        this build's default (engines/llama_cpp_memory.py)."""
        asked = self.profile.value("flash_attn", -1.0)
        return flash_attention_default(self.build_date) if asked < 0 else bool(asked)

    @property
    def ubatch(self) -> int:
        """Tokens of one physical batch: `n_ubatch` (`-ub`, `--engine-opt n-ubatch=N`; the data's 512 by default),
        at most the logical batch `n_batch`, as src/llama-context.cpp clamps it (`cparams.n_ubatch =
        std::min(cparams.n_batch, params.n_ubatch == 0 ? params.n_batch : params.n_ubatch)`)."""
        n = self.profile.value("n_ubatch", 512)
        if n < 1 or n != int(n):
            raise ConfigError(f"--engine-opt n-ubatch={n:g}: expected a whole number of tokens, 1 or more")
        return min(int(n), int(self.profile.value("n_batch", 2048)))

    def fitted(self, arch, weights, context: int, gpus: int = 1, kv_bytes: float = 2.0):
        """(n_ctx, layers on the GPU, sentence) of `--fit on` (`--engine-opt fit`), None when it is off: the model's
        context fitted, then layers, to leave the margin free on the GPUs' usable memory."""
        if not self.profile.value("fit", 0) or self.device.kind not in ("gpu", "soc"):
            return None
        from sizeup.hardware.usable import usable_memory

        usable = usable_memory(self.device).bytes

        def fit(free: float):
            return fit_params(arch, weights, free=free * gpus,
                              margin=self.profile.value("fit_target_mib", 1024) * 2**20 * gpus,
                              min_ctx=int(self.profile.value("fit_ctx", 4096)), asked_ctx=context,
                              ubatch=self.ubatch, flash=self.flash_attention(),
                              kv_bytes=kv_bytes)

        ctx, layers, note = fit(usable.typical)
        low = fit(usable.low)  # free memory as low as the usable range goes (a desktop's display, other processes)
        if low[1] != layers:
            note += (f"; with {usable.low / 2**30:.2f} GiB free (the low end of the usable memory) it would keep "
                     f"{low[1]} of {arch.num_layers} layers on the GPU at a {low[0]:,}-token context")
        return ctx, layers, note

    def auto_gpu_layers(self, arch, weights, context: int, batch: int, gpus: int):
        fit = self.fitted(arch, weights, context * batch, gpus)
        return None if fit is None or fit[1] >= arch.num_layers else (fit[1], fit[2])

    def host_expert_layers(self, arch) -> int:
        """`--n-cpu-moe N` / `--cpu-moe` (common/arg.cpp): a buffer override (`-ot`) on the tensors matching
        `blk.<i>.ffn_(up|down|gate)_exps` for i < N keeps the routed experts of the first N layers in CPU RAM, where
        the CPU multiplies them (ggml's scheduler runs an op where its weights are; at a decode's few tokens nothing is
        copied to the GPU); attention, the router and any shared expert stay on the GPU. 0 on a dense model."""
        if self.profile.value("cpu_moe", 0):
            return arch.num_layers if arch.is_moe else 0
        n = self.profile.value("n_cpu_moe", 0)
        if n < 0 or n != int(n):
            raise ConfigError(f"--engine-opt n-cpu-moe={n:g}: expected a whole number of layers, 0 or more")
        return min(int(n), arch.num_layers) if arch.is_moe else 0

    OP_OFFLOAD_MIN_BATCH = 32
    """ggml-cuda's `ggml_backend_cuda_device_offload_op`: an op whose weights sit in a host buffer runs on the GPU
    (the weights copied there first) when its batch is at least 32 tokens (`op_offload`, on unless --no-op-offload;
    ggml-backend.cpp `ggml_backend_sched_backend_id_from_cur`)."""

    def host_weights_on_device(self, decode: bool, tokens: int) -> bool:
        return not decode and min(tokens, self.ubatch) >= self.OP_OFFLOAD_MIN_BATCH

    host_kv = property(lambda self: bool(self.profile.value("no_kv_offload", 0)))
    """`--no-kv-offload`: the KV cache in host RAM, attention on the host CPU (engines/llama_cpp_host_kv.py)."""

    def step_extra(self, arch, ledger, weights: str, decode: bool, tokens: int):
        extras = [x for x in (self._expert_copies(arch, weights, decode, tokens),
                              host_kv_step(self, arch, ledger, decode, tokens) if self.host_kv else None) if x]
        if not extras:
            return None
        total = extras[0][0]
        for more in extras[1:]:
            total = total + more[0]
        return total, "; ".join(x[1] for x in extras)

    def _expert_copies(self, arch, weights: str, decode: bool, tokens: int):
        """A prompt with experts kept in CPU RAM (`--n-cpu-moe`): each physical batch of `n_ubatch` tokens copies
        every expert tensor of those layers (one MUL_MAT_ID weight holds all the layer's experts) over the host link
        before the GPU multiplies it, one copy after another (their bytes / the link's one-direction bandwidth)."""
        layers = self.host_expert_layers(arch) if self.device.kind != "cpu" else 0
        link = self.device.pcie_bytes_per_s
        if not layers or not self.host_weights_on_device(decode, tokens) or not link:
            return None
        ubatch = self.ubatch
        moved, t, copies = expert_copies(arch, weights, layers, 1.0, tokens, ubatch, link)
        return Range(t, t, t), (f"prefill: {copies} physical batch(es) of up to {ubatch} tokens each copy the "
                                f"{moved / 2**30:.2f} GiB of experts kept in CPU RAM to {self.device.id} over its host "
                                f"link ({link / 1e9:.1f} GB/s one way) before multiplying them there (ggml op offload "
                                f"at 32 tokens or more): {t * 1e3:,.0f} ms")

    def cache_cells(self, request) -> tuple[int, str | None]:
        """KV cells allocated for the request (n_ctx: --context, default prompt + output as llama-bench sizes it;
        under `--fit` the context it fits), and the sentence saying why where the engine allocates more than the
        request needs (None)."""
        asked = request.context * request.batch
        fit = self.fitted(request.arch, request.weights, asked, kv_bytes=KV_BYTES_PER_ELEMENT[request.kv_dtype])
        if fit is None or fit[0] <= asked:
            return asked, None
        return fit[0], f"{fit[2]}: the KV cache holds {fit[0]:,} tokens (llama-server without -c), whatever the request uses"

    def memory(self, request):
        ubatch = self.ubatch
        cells, why = self.cache_cells(request)
        compute = compute_buffer(request.arch, ubatch, cells, self.flash_attention())
        embedding = input_layer_bytes(request.arch, request.weights)
        host = (embedding, f"{self.NAME} keeps the token embedding ({embedding / 2**20:,.0f} MiB) in CPU RAM, off the "
                           f"device (src/llama-model.cpp: the input layer always stays on the CPU)")
        mem = whole_context_cache(request, ubatch=ubatch, tower=TOWER_ATTENTION, compute=compute, host_input=host)
        asked = request.context * request.batch
        if cells <= asked:
            return host_kv_memory(mem) if self.host_kv else mem
        scale = cells / asked
        kv, needed = int(mem.kv_cache_bytes * scale), int(mem.kv_cache_needed_bytes * scale)
        total = mem.weights_bytes + kv + mem.activations_bytes + mem.overhead_bytes
        mem = replace(mem, kv_cache_bytes=kv, kv_cache_needed_bytes=needed, fits=total <= request.usable.typical,
                      cpu_bytes=mem.cpu_bytes + (needed - kv) - (mem.kv_cache_needed_bytes - mem.kv_cache_bytes),
                      notes=(*mem.notes, why))
        return host_kv_memory(mem) if self.host_kv else mem

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="continuous", chunked_prefill=False,
                        max_batched_tokens=int(self.profile.value("n_batch", 2048)),
                        physical_batch_tokens=self.ubatch,
                        basis="llama-server: continuous batching on by default (tools/server/README.md, -cb); a prompt "
                              "is computed n_ubatch tokens at a time (common/common.h)")

    def launch(self, request: LaunchRequest) -> Launch:
        """`llama-server` (the server image's entry point) on its default port 8080: the GGUF repository and tag
        (`-hf repo:TAG`), every layer on the GPU, a context of `max_len` per slot for `max_batch` parallel slots
        (the server splits --ctx-size among them), and /metrics on."""
        parallel = max(1, request.max_batch)
        return Launch(command=("llama-server",), args=(
            "--hf-repo", request.checkpoint, "--host", "0.0.0.0", "--port", "8080", "--n-gpu-layers", "999",
            "--ctx-size", str(request.max_len * parallel), "--parallel", str(parallel), "--metrics"),
            port=8080, entrypoint=True)
