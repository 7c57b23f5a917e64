"""The priced steps of one serving configuration (workload/serving.py's steady state, serving_runs.py's stepped runs): a
decode step of B running requests at the mean context, a prefill of k prompts, and what prompt tokens riding in a
decode step add when one GEMM per weight matrix runs over all the step's rows. Each is an estimate of
workload/inference.py, cached by batch and GEMM rows, at a corner of the ranges ('low' / 'typical' / 'high')."""

from __future__ import annotations

import math
from dataclasses import replace

from sizeup.hardware.schema import DeviceSpec
from sizeup.ingest.arch import ModelArch
from sizeup.price import streaming
from sizeup.price.execution import expert_rows, phase_efficiency
from sizeup.workload import host_floor
from sizeup.workload.inference import InferenceConfig, InferenceEstimate, estimate_inference
from sizeup.workload.request_mix import RequestMix

__all__ = ["Steps", "step_kernel"]


def kernel_grid(rows: float) -> int:
    """A step's rows down to a power of 2^(1/2) (the kernels' row thresholds are powers of 2)."""
    return int(2 ** (math.floor(2 * math.log2(max(rows, 1.0))) / 2))


def step_kernel(execution, arch: ModelArch, fmt, decode: bool, own: int, rows: float) -> int | None:
    """The rows (`kernel_grid`) a phase of `own` tokens prices its GEMMs at in a mixed step of `rows` tokens (one
    GEMM per weight matrix over decodes and prompt tokens: the engine's kernel and a MoE layer's rows per expert
    are the sum's); None where the kernel there is the one at the phase's own tokens. `fmt`: the weight format."""
    grid = kernel_grid(rows)
    if grid == own:
        return None
    kernel = [phase_efficiency(execution, decode, fmt, own, expert_rows(arch, n), n) for n in (own, grid)]
    return None if kernel[0] == kernel[1] else grid


class Steps:
    """Priced steps of one configuration at request lengths I / O, cached by batch: decode(B) at the mean context,
    prefill(k prompts)."""

    def __init__(self, arch: ModelArch, device: DeviceSpec, cfg: InferenceConfig, execution, mix: RequestMix):
        self.arch, self.device, self.execution, self.beams = arch, device, execution, mix.beams
        self.cfg = replace(cfg, prompt=mix.input_tokens, output=mix.output_tokens, context=None)
        self._memo: dict[tuple[int, int | None], InferenceEstimate] = {}
        self._kernels: dict[tuple[bool, int, int], int | None] = {}

    def at(self, batch: int, rows: int | None = None) -> InferenceEstimate:
        """The estimate at `batch` sequences, its GEMMs at `rows` rows (`gemm_rows`; None: each phase's own)."""
        key = (max(int(batch), 1), rows)
        if key not in self._memo:
            self._memo[key] = estimate_inference(self.arch, self.device,
                                                 replace(self.cfg, batch=key[0], step_tokens=rows),
                                                 limits=False, execution=self.execution)
        return self._memo[key]

    def gemm_rows(self, decode: bool, batch: int, rows: float | None) -> int | None:
        """The rows a phase at `batch` sequences prices its GEMMs at in a step of `rows` tokens (a mixed step runs one
        GEMM per weight matrix over decodes and prompt tokens: the engine's kernel and a MoE layer's rows per expert
        are the sum's), down to a power of 2^(1/2) (the kernels' row thresholds are powers of 2); None where the
        kernel there is the one at the phase's own tokens (no estimate of its own needed)."""
        if not rows:
            return None
        key = (decode, batch if decode else batch * self.cfg.prompt, kernel_grid(rows))
        if key not in self._kernels:
            self._kernels[key] = step_kernel(self.execution, self.arch, self.at(1).weights, decode, key[1], rows)
        return self._kernels[key]

    def decode(self, batch: float, corner: str) -> float:
        """One decode step of `batch` running requests (each `beams` sequences), at least the engine's host time."""
        gpu = self.sequences(batch * self.beams, corner) + self.streaming(batch * self.beams, corner)
        return host_floor.floored(self, batch, gpu, corner)

    def streaming(self, decodes: float, corner: str, prompt: float = 0.0, lump: float = 1.0) -> float:
        """price/streaming.py's step_excess (R: streaming.weight_read; a token's compute: at a prefill's rate)."""
        terms, per_token = streaming.read_terms(self.arch), self.per_token(corner)
        return streaming.step_excess(self.read(corner), per_token, decodes, prompt, lump, corner, terms)

    def sequences(self, batch: float, corner: str, rows: float | None = None) -> float:
        """One decode step at `batch` running sequences, log-interpolated between priced powers of 2^(1/2); `rows`:
        the tokens of the step it runs in, where prompt tokens share its GEMMs (`gemm_rows`)."""
        if batch <= 1:
            return self._decode_at(1, corner, rows)
        if float(batch).is_integer() and ((int(batch), None) in self._memo or batch > self.EXACT_ABOVE):
            return self._decode_at(int(batch), corner, rows)  # priced at that batch, not interpolated
        b_lo, b_hi = self._bracket(batch)
        t_lo, t_hi = self._decode_at(b_lo, corner, rows), self._decode_at(b_hi, corner, rows)
        return t_lo if b_hi == b_lo else t_lo + (t_hi - t_lo) * (batch - b_lo) / (b_hi - b_lo)

    EXACT_ABOVE = 64
    """`sequences` prices an integer batch above it at that batch; at or below, between powers of 2^(1/2)."""

    @staticmethod
    def _bracket(batch: float) -> tuple[int, int]:
        """The powers of 2^(1/2) (rounded) `sequences` interpolates `batch` (> 1) between."""
        k = 2 * math.log2(batch)
        return round(2 ** (math.floor(k) / 2)), round(2 ** (math.ceil(k) / 2))

    def keeps_kernel(self, batch: int, rows: float) -> bool:
        """Whether every decode estimate `sequences(batch, corner, rows)` may read (the batch itself and, up to
        EXACT_ABOVE, the two powers of 2^(1/2) it lies between) keeps its own kernel in a step of `rows` tokens
        (`gemm_rows` None): then the step's kernel term is 0 and a caller may price it without them."""
        reads = {max(int(batch), 1)} | (set(self._bracket(batch)) if 1 < batch <= self.EXACT_ABOVE else set())
        return all(self.gemm_rows(True, b, rows) is None for b in reads)

    def _decode_at(self, batch: int, corner: str, rows: float | None = None) -> float:
        return getattr(self.at(batch, self.gemm_rows(True, batch, rows)).decode.latency_s, corner)

    def joined(self, decodes: float, prompt: float, corner: str) -> float:
        """What `prompt` tokens add to a decode step of `decodes` sequences by riding in it: one GEMM per weight
        matrix at M = decodes + prompt rows, so the decodes' GEMMs at M's kernel (`gemm_rows`) and the matrix
        products' max(R(M), M x c) in place of max(R(decodes), decodes x c), R(n) the weights n tokens read (a
        mixture of experts: the experts they route to, price/streaming.py `read_growth`), c a token's compute at
        M's kernel. The weights are read once a step, however its rows divide between decodes and prompts."""
        rows = decodes + prompt
        kernel = self.sequences(decodes, corner, rows) - self.sequences(decodes, corner)
        return streaming.joined(self.read(corner), self.per_token(corner, rows), decodes, rows,
                                streaming.read_terms(self.arch), kernel)

    def read(self, corner: str) -> float:  # R of one token (price/streaming.py), at most the single-sequence step
        return streaming.weight_read(self.device, self.at(1).memory.weights_bytes, self.arch, self.sequences(1, corner))

    def per_token(self, corner: str, rows: float | None = None) -> float:
        """A token's compute: a compute-bound prefill's time per token (price/streaming.py `compute_batch`), its
        GEMMs at the kernel of a step of `rows` tokens where given (`gemm_rows`)."""
        k = streaming.compute_batch(self.cfg.prompt)
        return getattr(self.at(k, self.gemm_rows(False, k, rows)).prefill.latency_s, corner) / (k * self.cfg.prompt)

    def prefill(self, tokens: float, corner: str) -> float:
        """Prefill time of `tokens` prompt tokens, batched as whole prompts of I tokens (fewer: a share of one)."""
        k = max(1, round(tokens / self.cfg.prompt))
        return getattr(self.at(k).prefill.latency_s, corner) * tokens / (k * self.cfg.prompt)
