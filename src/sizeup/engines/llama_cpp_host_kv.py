"""llama.cpp's `--no-kv-offload` / llama-bench `-nkvo 1` (`--engine-opt no-kv-offload`): the KV cache in host RAM
and the attention run on the host CPU while every layer's matrix products stay on the GPU (engines/llama_cpp.py).

Where it runs (github.com/ggml-org/llama.cpp, read 2026-12-06): `offload_kqv = !no_kv_offload` (common/common.cpp);
the KV cache allocates each layer's K and V in the CPU buffer type when offload is off (src/llama-kv-cache.cpp: the
`offload` argument picks the layer's device buffer, else `ggml_backend_cpu_buffer_type()`), and the graph callback
pins the attention to the CPU backend: `if (!cparams.offload_kqv) ... ggml_backend_sched_set_tensor_backend(sched,
cur, backend_cpu)` on the merged attention output, so every node from the KV store to `kqv_merged_cont` runs on the
CPU (src/llama-context.cpp graph_get_cb; src/llama.cpp llama_build_graph's callback in the 2024 builds). The
scheduler then splits each layer twice: the new tokens' Q, K and V copied to the host, the attention output copied
back (ggml-backend.cpp split inputs).

A step is priced as the GPU's ledger (unchanged) plus, per layer on the host:
- the attention itself (KQ, softmax, KQ·V) on the host CPU: ggml's CPU matmul with an F16 cache (`vec_dot_f16`) at
  `host_kv_dot_fraction` of the CPU's FP32 FMA peak on the threads it runs, and the cache read at the host's
  memory bandwidth (the larger of the two); without flash attention ggml multiplies the whole n_tokens x n_kv
  rectangle and masks it afterwards, so a prompt does twice the causal triangle's work;
- the activations over PCIe: Q, K, V (f32) down and the attention output (f32) up, at the GPU's host-link bandwidth;
- per split copy a synchronous copy (`host_kv_copy_s`), and per host node the CPU's per-op cost.

Threads: builds from PR 2915 (2023-08-30) until the ggml-backend integration (PR 4766, 2024-01-12) ran a fully
offloaded model on 1 thread (`host_kv_threads` 1 in the data); later builds run the CPU backend on the physical
cores (llama-bench's default). The host CPU is the device's `host_cpu` where it names one, else `HOST_DEFAULT`, an
assumed desktop host (the rows that use this name none).
"""

from __future__ import annotations

from dataclasses import replace

from sizeup.errors import ConfigError
from sizeup.ledger import OpKind
from sizeup.ranges import Range

__all__ = ["HOST_DEFAULT", "host_kv_memory", "host_kv_step"]

HOST_DEFAULT = "core-i9-13900k"
"""An ASSUMED host for a GPU that names no host_cpu: a current desktop CPU (8 Raptor Cove P-cores, dual-channel
DDR5-5600). Not a measured figure of any row's machine: `--engine-opt no-kv-offload` rows say their host is unknown."""
HOST_NODES_PER_LAYER = 6
"""CPU graph nodes per layer between the KV store and the merged output: the K and V copies into the cache, KQ,
the fused soft_max_ext (scale + mask + softmax), KQ·V and the merged output's cont (views and permutes are free)."""
COPIES_PER_LAYER = 4
"""Split inputs per layer: Q, K and V to the host, the attention output back to the GPU."""
F32 = 4


def host_kv_memory(mem):
    """The InferenceMemory with the KV cache moved off the device into host RAM (cpu_bytes)."""
    kv = mem.kv_cache_needed_bytes
    total = mem.total_bytes - mem.kv_cache_bytes
    return replace(mem, kv_cache_bytes=0, cpu_bytes=mem.cpu_bytes + mem.kv_cache_bytes,
                   fits=total <= mem.usable_bytes.typical, notes=(*mem.notes, (
                       f"--no-kv-offload: the KV cache ({kv / 2**30:.2f} GiB) is allocated in host RAM, not on the "
                       f"device (src/llama-kv-cache.cpp: the CPU buffer type when offload is off)")))


def _host(device):
    from sizeup.hardware.catalog import load_catalog

    devices = load_catalog().devices
    if device.host_cpu and device.host_cpu in devices:
        return devices[device.host_cpu], f"{device.host_cpu} ({device.id}'s host_cpu)"
    return devices[HOST_DEFAULT], f"{HOST_DEFAULT} (ASSUMED: {device.id} names no host CPU)"


def _core_rate(cpu) -> float:
    """FP32 FMA FLOP/s of one of the CPU's fastest cores (its first core type where it lists them)."""
    if cpu.core_types:
        from sizeup.hardware.catalog import load_architectures

        _, arch_id, _, clock = cpu.core_types[0]
        return load_architectures().get(arch_id, str(cpu.path)).vector["fp32"] * clock
    return cpu.vector_flops_per_s["fp32"] / max(cpu.compute_units or 1, 1)


def host_kv_step(model, arch, ledger, decode: bool, tokens: int) -> tuple[Range, str] | None:
    """Host time of one step's attention with the cache in host RAM, with the sentence that says so."""
    device = model.device
    if device.kind != "gpu":
        raise ConfigError(f"--engine-opt no-kv-offload on {device.id} ({device.kind}): the KV cache already sits in "
                          f"the memory the {device.kind} computes from; the option only moves it off a discrete GPU")
    link = device.pcie_bytes_per_s
    if not link:
        raise ConfigError(f"--engine-opt no-kv-offload on {device.id}: its host link (pcie) is not in its data file")
    cpu, which = _host(device)
    threads = int(model.profile.value("host_kv_threads", 0)) or (cpu.compute_units or 1)
    cores = cpu.compute_units or 1
    peak = _core_rate(cpu) if threads == 1 else cpu.vector_flops_per_s["fp32"] * min(threads, cores) / cores
    dot = model.profile.range("host_kv_dot_fraction") or Range(1.0, 1.0, 1.0)
    copy = model.profile.range("host_kv_copy_s") or Range(0.0, 0.0, 0.0)
    per_op = model.profile.range("host_kv_op_s") or Range(0.0, 0.0, 0.0)
    bandwidth = cpu.memory_bandwidth_bytes_per_s
    rectangle = 1.0 if decode or model.flash_attention() else 2.0
    flops = moved = layers = 0.0
    for op in ledger.ops:
        if op.kind != OpKind.ATTENTION:
            continue
        layers += op.count
        flops += op.flops * op.count * rectangle
        moved += (op.bytes_read + op.bytes_written) * op.count
    if not layers:
        return None
    a = arch.layers[0].attention
    width = a.heads * a.head_dim + a.kv_heads * (a.head_dim + a.v_head_dim) + a.heads * a.v_head_dim
    per_layer = tokens * F32 * width  # Q, K, V down and the attention output up, f32
    transfer = layers * per_layer / link
    memory = moved / bandwidth

    def at(d: float, c: float, o: float) -> float:
        return max(flops / (peak * d), memory) + transfer + layers * (COPIES_PER_LAYER * c + HOST_NODES_PER_LAYER * o)

    # the slower dot rate, the slower copy and node cost make the high time (a Range's low..high is of the time)
    t = Range(at(dot.high, copy.low, per_op.low), at(dot.typical, copy.typical, per_op.typical),
              at(dot.low, copy.high, per_op.high))
    return t, (f"--no-kv-offload: attention of {int(layers)} layers on the host CPU {which}, {threads} thread(s) "
               f"({flops / 1e9:,.2f} GFLOP at {dot.typical:.0%} of {peak / 1e9:,.0f} GFLOP/s FP32"
               f"{', the whole KQ rectangle (no flash attention)' if rectangle > 1 else ''}; "
               f"{moved / 2**20:,.1f} MiB at {bandwidth / 1e9:,.1f} GB/s), Q/K/V and its output over {device.id}'s "
               f"host link ({layers * per_layer / 2**20:,.1f} MiB at {link / 1e9:,.1f} GB/s), {COPIES_PER_LAYER} "
               f"synchronous copies and {HOST_NODES_PER_LAYER} CPU nodes per layer: {t.typical * 1e3:,.2f} ms per step")
