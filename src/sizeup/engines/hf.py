"""Hugging Face transformers, eager `generate()` (data/engines/hf.yaml).

Every op is dispatched from Python, one kernel per aten op: at decode the host's per-op cost (`decode_overhead_s`)
bounds small kernels, the step pays generate()'s own Python (`step_overhead_s`), and ops the ledger counts once run
as several kernels (RMSNorm 6-8, rotary 10: `eager_kernels.*`, engines/eager_kernels.py). A Mamba layer steps
mamba_ssm's Triton kernel from Python and, in transformers 4.42-4.5x, forces two host-device syncs (`ssm_*`).
Memory is allocated on demand through PyTorch's caching allocator (data/engines/pytorch.yaml), the whole prompt one
forward pass, attention through the implementation asked for (sdpa by default: flash, memory-efficient or the math
path by device and dtype, price/attention_kernels.py); LLaVA keeps its extra vision feature layers.
"""

from __future__ import annotations

from sizeup.engines.base import Batching, ExecutionModel, engine
from sizeup.engines.eager_kernels import eager_kernel_overhead, ssm_layer_host
from sizeup.engines.profile import engine_profile
from sizeup.engines.reserve import allocate_on_demand
from sizeup.ingest.arch import ModelArch
from sizeup.ranges import Range


_BNB_INT8 = ("int8", "int8-bnb")
"""Formats transformers loads through bitsandbytes' LLM.int8() (`load_in_8bit`): MatMul8bitLt per linear."""
_BNB_4BIT = ("nf4", "nf4-no-dq", "bnb-fp4")
"""Formats transformers loads through bitsandbytes' 4-bit Linear4bit (`load_in_4bit`, nf4 or fp4 codes)."""


_FUSED_QKV = frozenset({"bloom", "falcon", "gpt_neox", "gpt2", "gpt_bigcode", "mpt", "phi3"})
"""Model types whose transformers module computes q, k and v with one nn.Linear (bloom/falcon/gpt_neox
`query_key_value`, gpt2/gpt_bigcode `c_attn`, mpt `Wqkv`, phi3 `qkv_proj`), where the ledger has three: one
bitsandbytes call, not three (transformers models/<type>/modeling_<type>.py)."""


def _linears(ledger, model_type: str) -> tuple[int, int]:
    """(calls, weights) of the quantized linears a step runs: the ledger's linears but the LM head (transformers'
    bitsandbytes integration leaves it 16-bit), a fused q/k/v projection one call, not three."""
    ops = [o for o in ledger.ops if o.op == "linear" and "lm_head" not in o.scope]
    fused = model_type in _FUSED_QKV
    calls = sum(o.count for o in ops if not (fused and o.scope.endswith((".k_proj", ".v_proj"))))
    return calls, sum(o.count * o.matmul_flops // 2 for o in ops)


@engine("hf", "transformers", "huggingface")
class HFTransformers(ExecutionModel):
    FORMATS = ("bf16", "int8", "nf4")
    FORMAT_NAMES = {
        "4bit": ("bnb-fp4", "transformers' load_in_4bit: bitsandbytes 4-bit, BitsAndBytesConfig's default "
                            "bnb_4bit_quant_type 'fp4'; --quant nf4 for NF4"),
        "loadin4bit": ("bnb-fp4", "transformers' load_in_4bit: BitsAndBytesConfig's default bnb_4bit_quant_type 'fp4'"),
        "8bit": ("int8-bnb", "transformers' load_in_8bit: bitsandbytes LLM.int8()"),
        "loadin8bit": ("int8-bnb", "transformers' load_in_8bit: bitsandbytes LLM.int8()"),
        "fp4": ("bnb-fp4", "bitsandbytes FP4 (bnb_4bit_quant_type 'fp4')"),
    }

    def step_extra(self, arch: ModelArch, ledger, weights: str, decode: bool,
                   tokens: int) -> tuple[Range, str] | None:
        """bitsandbytes as transformers runs it. LLM.int8() (MatMul8bitLt): per linear the activation's
        row/column statistics, outlier extraction (two host syncs: the outlier count `.item()` and torch.unique
        of the outlier columns), the col32 transform, igemmlt, mm_dequant and the fp16 outlier matmul, each a
        launch from Python: `bnb_int8_linear_host_s` per linear. 4-bit (nf4 / fp4): one token per step runs the
        gemv_4bit kernel (plus the nested absmax's dequantization), more tokens dequantize each weight to a 16-bit
        copy (written, then read by the matmul: `bnb_4bit_dequant_bytes_per_weight` beyond the ledger's packed
        read) and run a 16-bit matmul; `bnb_4bit_linear_host_s` per linear either way."""
        if self.device.kind != "gpu" or weights not in _BNB_INT8 + _BNB_4BIT:
            return None
        calls, weight_flops = _linears(ledger, arch.model_type)
        int8 = weights in _BNB_INT8
        host = self.profile.range("bnb_int8_linear_host_s" if int8 else "bnb_4bit_linear_host_s")
        if host is None or not calls:
            return None
        total, what = host.scale(calls), (f"LLM.int8() per linear (outlier threshold 6.0: statistics, outlier "
                                          f"extraction with 2 host syncs, col32 transform, igemmlt, dequantize, "
                                          f"fp16 outlier matmul)" if int8 else
                                          f"bitsandbytes 4-bit per linear ({'gemv_4bit' if tokens == 1 else 'dequantize_4bit + 16-bit matmul'})")
        note = f"{self.NAME} {weights} (bitsandbytes): {what}: +{host.typical * 1e6:.0f} us x {calls} linears"
        per_weight = self.profile.value("bnb_4bit_dequant_bytes_per_weight", 0.0)
        bandwidth = self.device.memory_bandwidth_bytes_per_s
        if not int8 and tokens > 1 and per_weight and bandwidth:
            moved = per_weight * weight_flops / tokens
            share = self.profile.range("bnb_dequant_memory_fraction") or Range(0.85, 0.85, 0.85)
            dequant = Range(moved / (bandwidth * share.high), moved / (bandwidth * share.typical),
                            moved / (bandwidth * share.low))
            total = total + dequant
            note += (f"; each weight dequantized to a 16-bit copy first ({per_weight:g} B per weight written and read "
                     f"back, {moved / 1e9:,.2f} GB: +{dequant.typical * 1e3:.2f} ms)")
        return total, note + " per step"

    def step_overhead(self, arch: ModelArch, decode: bool) -> Range | None:
        """generate()'s Python per step and, at decode on a GPU, each state-space layer's own host time (its Triton
        launch and forced syncs: engines/eager_kernels.ssm_layer_host)."""
        step = self.profile.range("step_overhead_s")
        if not decode:
            return step
        for layer in arch.layers:
            host = ssm_layer_host(self.profile, layer.ssm, self.device) if layer.ssm is not None else None
            if host is not None:
                step = host + step if step is not None else host
        return step

    def extra_launches(self, ledger, fp32: bool, per_op: Range | None = None) -> tuple[Range, str] | None:
        eager = eager_kernel_overhead(self.profile, ledger, self.device, fp32)
        if eager is None:
            return None
        return eager, (f"{self.NAME}: eager PyTorch runs the decode step's ops as more kernels than the ledger counts "
                       f"(RMSNorm as 6-8 aten ops...; data/engines/hf.yaml eager_kernels): +{eager.typical * 1e3:.2f} ms of "
                       f"host time per step")

    def phase_notes(self, arch: ModelArch, decode: bool) -> tuple[str, ...]:
        ssm_layers = [layer.ssm for layer in arch.layers if layer.ssm is not None]
        host = ssm_layer_host(self.profile, ssm_layers[0], self.device) if decode and ssm_layers else None
        if host is None:
            return ()
        syncs = self.profile.value(f"ssm_host_syncs.v{ssm_layers[0].version}", 0.0)
        return (f"{self.NAME}: every state-space layer's decode step launches mamba_ssm's Triton "
                f"selective_state_update from Python (Triton 2.x launcher)"
                + (f" and forces {syncs:.0f} host-device syncs (transformers 4.42-4.5x "
                   f"`cache_position[0] > 0`)" if syncs else "")
                + f": +{host.typical * 1e6:.0f} us of host time per layer and token",)

    def memory(self, request):
        path = request.attention_path(request.attention)
        tower, kept = request.arch.tower, 0
        if tower is not None and tower.kind == "vision" and tower.class_token and tower.projector:
            kept = tower.projector[0] // tower.hidden - 1  # LLaVA's vision_feature_layer(s) beyond one
        return allocate_on_demand(request, allocator=engine_profile("pytorch").range("allocator_overhead_fraction"),
                                  tower=(path.fused, f"{path.implementation} {path.kernel}, {path.reason}", kept))

    @property
    def batching(self) -> Batching:
        return Batching(scheduling="static", basis="generate() runs one batch of prompts to their last token")
