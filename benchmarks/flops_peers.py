"""FLOPs against peers: sizeup's matrix-product FLOPs vs fvcore, thop, ptflops, calflops and torch's
FlopCounterMode, each checked against a ground truth written by hand from the layer shapes.

    python benchmarks/flops_peers.py              # plain table
    python benchmarks/flops_peers.py --markdown   # also the Markdown table used in benchmarks/README.md

Ground truth = matrix-product FLOPs only: 2 x multiply-adds of every conv, linear, matmul/bmm/einsum
product and attention Q.K^T and P.V (the full Lq x Lk rectangle, no causal discount); bias adds,
norms, activations, softmax, pooling, interpolate and grid_sample are excluded.

Peers run the real model on real (CPU) tensors; fvcore, thop and ptflops report MACs and are
doubled here; calflops reports FLOPs and MACs (its FLOPs are used); FlopCounterMode reports FLOPs.
Each peer reports its *default* total, so a peer can be off both by missing matrix products and by
adding non-matrix ops (batch norm, activations, pooling, upsampling) that the ground truth excludes.
sizeup's time includes building the model and tracing it on fake tensors; a peer's time covers only
its counting call on a model built beforehand. One timed run each, after one untimed warm-up run of
every counter on a small model (lazy imports, jit and fake-tensor set-up).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

try:
    import sizeup  # noqa: F401
except ImportError:  # not installed: use the checkout's src/
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

import torch

from sizeup.examples import zoo
from sizeup.ingest.torch_trace import InputSpec, trace_module

# ---- ground truth, by hand ------------------------------------------------------------------------


def conv_flops(c_in: int, c_out: int, k: int, h_out: int, w_out: int, groups: int = 1, n: int = 1) -> int:
    """2 x (one multiply-add per kernel tap of each output element); no bias."""
    return 2 * n * c_out * h_out * w_out * (c_in // groups) * k * k


def linear_flops(tokens: int, d_in: int, d_out: int) -> int:
    """2 x tokens x d_in x d_out; the bias add is excluded."""
    return 2 * tokens * d_in * d_out


def attention_flops(batch: int, heads: int, lq: int, lk: int, d: int, dv: int) -> int:
    """Q.K^T (2.Lq.Lk.D) + P.V (2.Lq.Lk.Dv) per (batch, query head); full rectangle, no causal halving."""
    return batch * heads * (2 * lq * lk * d + 2 * lq * lk * dv)


def gt_c2f() -> int:
    # C2f(64, 128, n=1): c = 64, input [1, 64, 64, 64], every conv keeps the 64x64 grid
    return (conv_flops(64, 128, 1, 64, 64)       # cv1 1x1 64->128          =  67,108,864
            + conv_flops(64, 64, 3, 64, 64)      # m[0].cv1 3x3 64->64      = 301,989,888
            + conv_flops(64, 64, 3, 64, 64)      # m[0].cv2 3x3 64->64      = 301,989,888
            + conv_flops(192, 128, 1, 64, 64))   # cv2 1x1 (2+1)*64=192->128 = 201,326,592


def gt_c2f_depthwise() -> int:
    # the same C2f with each 3x3 Conv replaced by depthwise 3x3 (groups=64) + pointwise 1x1
    return (conv_flops(64, 128, 1, 64, 64)                 # cv1 1x1 64->128         = 67,108,864
            + conv_flops(64, 64, 3, 64, 64, groups=64)     # m[0].cv1.dw 3x3 dw      =  4,718,592
            + conv_flops(64, 64, 1, 64, 64)                # m[0].cv1.pw 1x1 64->64  = 33,554,432
            + conv_flops(64, 64, 3, 64, 64, groups=64)     # m[0].cv2.dw 3x3 dw      =  4,718,592
            + conv_flops(64, 64, 1, 64, 64)                # m[0].cv2.pw 1x1 64->64  = 33,554,432
            + conv_flops(192, 128, 1, 64, 64))             # cv2 1x1 192->128        = 201,326,592


def gt_gpt2_small() -> int:
    # GPT-2 small, token ids [1, 128]: 12 blocks of hidden 768, 12 heads of 64; embeddings are lookups
    s, h, heads, layers, vocab = 128, 768, 12, 12, 50257
    block = (linear_flops(s, h, 3 * h)                          # c_attn 768->2304
             + attention_flops(1, heads, s, s, h // heads, h // heads)  # SDPA Q.K^T + P.V (causal, full)
             + linear_flops(s, h, h)                            # c_proj 768->768
             + linear_flops(s, h, 4 * h)                        # c_fc 768->3072
             + linear_flops(s, 4 * h, h))                       # mlp_proj 3072->768
    return layers * block + linear_flops(s, h, vocab)           # lm_head 768->50257 (tied to wte)


def gt_llama_block() -> int:
    # LLaMA block, x [1, 128, 512]: 8 query heads, 2 KV heads, head_dim 64, SwiGLU 1376.
    # The rotary tables' torch.outer(arange(128), inv_freq) is a broadcast multiply (k = 1), not counted.
    s, h, heads, kv_heads, inter = 128, 512, 8, 2, 1376
    d = h // heads
    return (linear_flops(s, h, heads * d)           # q_proj 512->512
            + linear_flops(s, h, kv_heads * d)      # k_proj 512->128
            + linear_flops(s, h, kv_heads * d)      # v_proj 512->128
            + attention_flops(1, heads, s, s, d, d)  # Q.K^T + P.V over the 8 *query* heads (KV repeated)
            + linear_flops(s, heads * d, h)         # o_proj 512->512
            + linear_flops(s, h, inter)             # gate_proj 512->1376
            + linear_flops(s, h, inter)             # up_proj 512->1376
            + linear_flops(s, inter, h))            # down_proj 1376->512


def gt_warp_block() -> int:
    # WarpBlock(32), x [1, 32, 32, 32]. interpolate (bilinear 2x) and grid_sample (bilinear) are not
    # matrix products and are excluded.
    b, c, hgt, wid = 1, 32, 32, 32
    return (2 * b * c * hgt * wid * c                # einsum bchw,dc->bdhw: b.d.h.w outputs x c terms
            + conv_flops(32, 2, 3, 64, 64))          # offset 3x3 conv 32->2 on the upsampled 64x64 grid


def gt_resnet50() -> int:
    # ResNet-50 v1.5, x [1, 3, 224, 224]; stride on the 3x3 conv of each stage's first bottleneck
    total = conv_flops(3, 64, 7, 112, 112)           # stem 7x7/2 3->64: 224 -> 112
    size, c_in = 56, 64                              # after the 3x3/2 max pool
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            s = stride if i == 0 else 1
            out = size // s
            total += conv_flops(c_in, width, 1, size, size)      # conv1 1x1 c_in->width (input grid)
            total += conv_flops(width, width, 3, out, out)       # conv2 3x3/s width->width
            total += conv_flops(width, 4 * width, 1, out, out)   # conv3 1x1 width->4.width
            if i == 0:                                           # downsample 1x1/s c_in->4.width
                total += conv_flops(c_in, 4 * width, 1, out, out)
            size, c_in = out, 4 * width
    return total + linear_flops(1, 2048, 1000)       # fc 2048->1000 after global average pooling


# ---- models ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    factory: Callable[[], torch.nn.Module]
    shape: tuple[int, ...]
    dtype: str  # "fp32" or "int64"
    truth: Callable[[], int]

    def spec(self) -> InputSpec:
        return InputSpec(shape=self.shape, dtype=None if self.dtype == "fp32" else self.dtype)

    def make_input(self) -> torch.Tensor:
        if self.dtype == "int64":
            return torch.randint(0, 50257, self.shape, dtype=torch.int64)
        return torch.randn(self.shape)


CASES = [
    Case("C2f", zoo.c2f, (1, 64, 64, 64), "fp32", gt_c2f),
    Case("C2f depthwise", zoo.c2f_depthwise, (1, 64, 64, 64), "fp32", gt_c2f_depthwise),
    Case("GPT-2 small", zoo.gpt2_small, (1, 128), "int64", gt_gpt2_small),
    Case("LLaMA block (SDPA)", zoo.llama_block, (1, 128, 512), "fp32", gt_llama_block),
    Case("LLaMA block (matmul)", zoo.llama_block_matmul, (1, 128, 512), "fp32", gt_llama_block),
    Case("Warp block", zoo.warp_block, (1, 32, 32, 32), "fp32", gt_warp_block),
    Case("ResNet-50", zoo.resnet50, (1, 3, 224, 224), "fp32", gt_resnet50),
]

# ---- counters: each takes (model, input) and returns FLOPs ------------------------------------------


class CounterError(Exception):
    pass


def count_fvcore(model: torch.nn.Module, x: torch.Tensor) -> int:
    from fvcore.nn import FlopCountAnalysis
    fca = FlopCountAnalysis(model, (x,))
    fca.unsupported_ops_warnings(False).uncalled_modules_warnings(False)
    return 2 * int(fca.total())  # fvcore counts one fused multiply-add as one "flop": MACs


def count_thop(model: torch.nn.Module, x: torch.Tensor) -> int:
    from thop import profile
    macs, _ = profile(model, inputs=(x,), verbose=False)
    return 2 * int(round(float(macs)))  # MACs


def _ptflops(backend: str) -> Callable[[torch.nn.Module, torch.Tensor], int]:
    def count(model: torch.nn.Module, x: torch.Tensor) -> int:
        from ptflops import get_model_complexity_info
        out = io.StringIO()
        macs, _ = get_model_complexity_info(model, tuple(x.shape[1:]), input_constructor=lambda _res: x,
                                            as_strings=False, print_per_layer_stat=False, backend=backend,
                                            ost=out)
        if macs is None:  # ptflops prints the exception and returns None
            raise CounterError(out.getvalue().strip().splitlines()[-1] if out.getvalue().strip() else "no count")
        return 2 * int(macs)  # MACs
    return count


def count_calflops(model: torch.nn.Module, x: torch.Tensor) -> int:
    from calflops import calculate_flops
    flops, _macs, _params = calculate_flops(model, args=[x], print_results=False, print_detailed=False,
                                            output_as_string=False)
    return int(flops)  # calflops reports FLOPs (and MACs)


def count_torch(model: torch.nn.Module, x: torch.Tensor) -> int:
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as counter:
        model(x)
    return int(counter.get_total_flops())  # FLOPs


PEERS: list[tuple[str, str, Callable[[torch.nn.Module, torch.Tensor], int]]] = [
    # (column, distribution for the version, counter)
    ("fvcore", "fvcore", count_fvcore),
    ("thop", "thop", count_thop),
    ("ptflops (pytorch)", "ptflops", _ptflops("pytorch")),
    ("ptflops (aten)", "ptflops", _ptflops("aten")),
    ("calflops", "calflops", count_calflops),
    ("torch FlopCounterMode", "torch", count_torch),
]


@dataclass
class Cell:
    flops: int | None
    seconds: float
    error: str | None = None


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    text = f"{type(e).__name__}: {text}" if text else type(e).__name__
    return text[:60]


def run_sizeup(case: Case) -> Cell:
    t0 = time.perf_counter()
    ledger = trace_module(case.factory, [case.spec()])
    seconds = time.perf_counter() - t0
    return Cell(ledger.totals().matmul_flops, seconds)


def run_peer(case: Case, count: Callable[[torch.nn.Module, torch.Tensor], int]) -> Cell:
    torch.manual_seed(0)
    try:
        model = case.factory().eval()
        x = case.make_input()
    except Exception as e:  # pragma: no cover - the zoo builds on any torch
        return Cell(None, 0.0, f"error: {_short(e)}")
    sink = io.StringIO()
    t0 = time.perf_counter()
    try:
        with torch.no_grad(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flops = count(model, x)
        return Cell(flops, time.perf_counter() - t0)
    except Exception as e:
        return Cell(None, time.perf_counter() - t0, f"error: {_short(e)}")


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _peer_available(dist: str) -> str | None:
    """None if the peer imports, else 'n/a (reason)'."""
    modules = {"fvcore": "fvcore.nn", "thop": "thop", "ptflops": "ptflops", "calflops": "calflops",
               "torch": "torch.utils.flop_counter"}
    try:
        __import__(modules[dist])
        return None
    except Exception as e:
        return f"n/a ({_short(e)})"


# ---- tables -------------------------------------------------------------------------------------


def _err(value: int, truth: int) -> str:
    pct = 100.0 * (value - truth) / truth
    if value == truth:
        return "exact"
    return f"{pct:+.2f}%" if abs(pct) >= 0.01 else f"{pct:+.1e}%"


def _g(value: int) -> str:
    return f"{value / 1e9:.3f} G" if value >= 1e9 else f"{value / 1e6:.2f} M"


def cell_text(cell: Cell, truth: int) -> str:
    if cell.error:
        return cell.error
    assert cell.flops is not None
    return f"{_g(cell.flops)} ({_err(cell.flops, truth)}) {cell.seconds:.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="also print the Markdown table")
    args = parser.parse_args()
    logging.getLogger("fvcore").setLevel(logging.ERROR)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

    columns = ["sizeup matmul_flops"] + [name for name, _, _ in PEERS]
    missing = {name: _peer_available(dist) for name, dist, _ in PEERS}
    rows: list[tuple[Case, int, dict[str, Cell | str]]] = []
    mismatches = []
    # one untimed warm-up per counter (lazy imports, jit / fake-tensor set-up), on a small warp block
    warm = Case("warm-up", zoo.warp_block, (1, 32, 8, 8), "fp32", gt_warp_block)
    run_sizeup(warm)
    for name, _dist, count in PEERS:
        if not missing[name]:
            run_peer(warm, count)
    for case in CASES:
        truth = case.truth()
        cells: dict[str, Cell | str] = {"sizeup matmul_flops": run_sizeup(case)}
        for name, _dist, count in PEERS:
            cells[name] = missing[name] or run_peer(case, count)
        got = cells["sizeup matmul_flops"]
        assert isinstance(got, Cell)
        if got.flops != truth:
            mismatches.append(f"{case.name}: sizeup {got.flops:,} != hand {truth:,}")
        rows.append((case, truth, cells))
        print(f"... {case.name} done", file=sys.stderr, flush=True)

    # plain table: one line per (model, counter)
    header = f"{'model':<22} {'counter':<22} {'FLOPs':>16} {'error':>9} {'time':>8}"
    print(header)
    print("-" * len(header))
    for case, truth, cells in rows:
        print(f"{case.name:<22} {'ground truth (hand)':<22} {truth:>16,} {'':>9} {'':>8}")
        for col in columns:
            c = cells[col]
            if isinstance(c, str) or c.error:
                print(f"{'':<22} {col:<22} {c if isinstance(c, str) else c.error}")
            else:
                assert c.flops is not None
                print(f"{'':<22} {col:<22} {c.flops:>16,} {_err(c.flops, truth):>9} {c.seconds:>7.2f}s")
    print()
    print("sizeup matmul_flops == hand ground truth: " + ("all models" if not mismatches else "; ".join(mismatches)))

    if args.markdown:
        versions = ", ".join(f"{d} {version(d)}" for d in dict.fromkeys(["torch"] + [d for _, d, _ in PEERS]))
        print()
        print(f"Measured {datetime.date.today().isoformat()}, {versions}, CPU, {torch.get_num_threads()} threads.")
        print()
        print("| model | ground truth (FLOPs) | " + " | ".join(columns) + " |")
        print("|---|---:|" + "---|" * len(columns))
        for case, truth, cells in rows:
            texts = [c if isinstance(c, str) else cell_text(c, truth) for c in (cells[col] for col in columns)]
            print(f"| {case.name} | {truth:,} | " + " | ".join(texts) + " |")
    return 0 if not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
