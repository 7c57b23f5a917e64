"""`sizeup flops TARGET --input SHAPE`: exact per-op FLOPs, bytes and peak memory of a torch model or ONNX graph."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from sizeup.report.terminal import render_table
from sizeup.units import format_bytes, format_si, number_flag

if TYPE_CHECKING:
    from sizeup.ledger import CostTotals


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments shared by the commands that trace a torch model."""
    p.add_argument("target", help="FILE.py:FACTORY or package.module:FACTORY returning an nn.Module, or MODEL.onnx")
    p.add_argument("--input", action="append", default=[], metavar="SHAPE",
                   help="float input shape like 1x64x64x64; comma-separate several inputs")
    p.add_argument("--input-spec", action="append", default=[], metavar="SPEC",
                   help="[NAME=]DTYPE:SHAPE, e.g. input_ids=int64:1x128 (keyword when NAME is given)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                   help="bind a symbolic input dimension of an ONNX graph, e.g. batch=8 (repeatable)")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16", "fp64"],
                   help="precision of parameters and float inputs (default fp32)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--backward", action="store_true", help="add the backward pass")
    mode.add_argument("--train", action="store_true", help="forward + backward + one optimizer step")
    p.add_argument("--optimizer", default="adamw", choices=["adamw", "adam", "sgd"],
                   help="optimizer traced with --train (default adamw)")
    p.add_argument("--by", default="module", choices=["module", "op", "kind"], help="rows of the table")
    p.add_argument("--depth", type=number_flag(integer=True, minimum=0, maximum=10_000), default=None,
                   help="deepest module level shown (root = 0)")
    p.add_argument("--top", type=number_flag(integer=True, minimum=0, maximum=10**6), default=3,
                   help="number of hot spots marked (default 3)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("flops", help="count FLOPs, bytes and peak memory of a PyTorch model",
                       description="Trace a PyTorch model on fake tensors (no memory used) and count every op.")
    add_model_arguments(p)
    p.set_defaults(func=run)


def trace_from_args(args: argparse.Namespace):
    from sizeup.api import count_flops, parse_input_specs
    from sizeup.errors import ConfigError

    if args.depth is not None and args.depth < 0:
        raise ConfigError(f"--depth {args.depth}: expected 0 or more")
    mode = "train" if args.train else "backward" if args.backward else "inference"
    if args.target.lower().endswith(".onnx"):
        from sizeup.api import count_onnx

        if args.input or args.input_spec:
            raise ConfigError(f"{args.target}: an ONNX graph carries its input shapes; bind symbolic sizes with "
                              "--dim NAME=SIZE instead of --input")
        if mode != "inference":
            raise ConfigError(f"{args.target}: an ONNX graph is priced for inference only (drop --{mode})")
        return count_onnx(args.target, dims=parse_dims(args.dim))
    if args.dim:
        raise ConfigError(f"--dim {args.dim[0]}: only for ONNX targets (MODEL.onnx); use --input for torch models")
    inputs = parse_input_specs(args.input, args.input_spec)
    from sizeup.cli.progress import Progress

    with Progress(f"tracing {args.target} ({mode})"):  # a 7B model traces for seconds: the clock runs on a terminal
        return count_flops(args.target, inputs, dtype=args.dtype, mode=mode, optimizer=args.optimizer)


def parse_dims(items: list[str]) -> dict[str, int]:
    """["batch=8", "seq=128"] -> {"batch": 8, "seq": 128}."""
    from sizeup.errors import ConfigError

    dims: dict[str, int] = {}
    for item in items:
        name, sep, size = item.partition("=")
        if not sep or not name.strip() or not (size.strip().isascii() and size.strip().isdigit()) or len(size) > 15 \
                or int(size) <= 0:
            raise ConfigError(f"--dim {item!r}: expected NAME=SIZE with a positive integer size, e.g. batch=8")
        dims[name.strip()] = int(size)
    return dims


def run(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json

    report = trace_from_args(args)
    if args.json:
        emit_json(report.to_dict(args.depth))
        return 0
    print(render_flops(report, by=args.by, depth=args.depth, top=args.top))
    return 0


def hot_spots(rows: dict[str, CostTotals], top: int) -> dict[str, int]:
    """Rank the leaf rows (no child row shown) by FLOPs: {name: rank} for the `top` largest."""
    names = list(rows)
    leaves = [n for n in names if not any(m != n and m.startswith(n + ".") for m in names) and n != ""]
    if not leaves:
        leaves = names
    ranked = sorted(leaves, key=lambda n: rows[n].flops, reverse=True)[:max(top, 0)]
    return {n: i + 1 for i, n in enumerate(ranked) if rows[n].flops > 0}


def render_flops(report, *, by: str, depth: int | None, top: int) -> str:
    total = report.total
    if by == "module":
        rows = report.scopes(depth)
        label = "module"
    elif by == "op":
        rows = dict(sorted(report.ledger.by_op().items(), key=lambda kv: -kv[1].flops))
        label = "op"
    else:
        rows = dict(sorted(report.ledger.by_kind().items(), key=lambda kv: -kv[1].flops))
        label = "kind"
    marks = hot_spots(rows, top)
    table_rows = []
    for name, t in rows.items():
        shown = (("  " * name.count(".") + name.rpartition(".")[2]) if name else f"{report.ledger.name} (total)") \
            if by == "module" else name
        share = t.flops / total.flops if total.flops else 0.0
        table_rows.append([
            shown,
            format_si(t.params, "") if by == "module" else "",
            format_si(t.flops, "FLOP"),
            format_bytes(t.bytes_moved),
            f"{t.arithmetic_intensity:.1f}",
            f"{share:6.1%}",
            f"<- hot #{marks[name]}" if name in marks else "",
        ])
    headers = [label, "params", "FLOPs", "bytes r+w", "FLOP/B", "share", ""]
    out = [render_table(headers, table_rows, right=[False, True, True, True, True, True, False],
                        title=f"{report.ledger.name}: {report.mode}, {report.dtype}")]
    out.append("")
    out.append(f"total: {total.flops:,} FLOPs ({total.matmul_flops:,} in matrix products), "
               f"{total.bytes_read:,} B read, {total.bytes_written:,} B written, {total.params:,} parameters")
    mem = report.memory
    parts = ", ".join(f"{k} {format_bytes(v)}" for k, v in mem.by_category.items())
    out.append(f"peak live memory: {format_bytes(mem.peak_bytes)} ({parts}) during {mem.phase}")
    uncounted = report.ledger.uncounted_ops()
    if uncounted:
        out.append("uncounted FLOPs (bytes counted): " + ", ".join(f"{k} x{v}" for k, v in uncounted.items()))
    for note in report.assumptions:
        out.append(f"assumption: {note}")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: sizeup flops")
