"""`sizeup roofline TARGET --input SHAPE --device NAME[,NAME…]`: the traced model priced per op."""

from __future__ import annotations

import argparse

from sizeup.cli.calibration import (LOCAL, add_calibration_arguments, add_runtime_argument, calibrated_scope,
                                    load_calibration, runtime_from_args)
from sizeup.cli.commands.flops import add_model_arguments, trace_from_args
from sizeup.cli.commands.hw import add_catalog_argument
from sizeup.report.terminal import render_table
from sizeup.units import format_seconds


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("roofline", help="price a PyTorch model's ops on one or more devices",
                       description="Trace the model, then price each op on the device: compute- or memory-bound, "
                                   "time as low/typical/high.")
    add_model_arguments(p)
    p.add_argument("--device", required=True, help="device name, or several separated by commas to compare; "
                                                   "'local' prices on this machine with its calibration")
    p.add_argument("--plot", metavar="FILE.png", help="draw the roofline chart of the first device: FILE.svg, and "
                                                      "FILE.png when cairosvg is installed")
    add_runtime_argument(p)
    add_calibration_arguments(p)
    add_catalog_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.price.roofline import LedgerArrays, price

    profile = load_calibration(args, "vision")
    catalog = load_catalog(args.catalog)
    names = [n.strip() for n in args.device.split(",") if n.strip()]
    if not names:
        raise ConfigError(f"--device {args.device!r}: expected a device name (see 'sizeup hw list')")
    devices = [profile.device if n == LOCAL and profile is not None else catalog.device(n) for n in names]
    report = trace_from_args(args)
    arrays = LedgerArrays.from_ledger(report.ledger)
    with calibrated_scope(profile, devices):
        runtime = runtime_from_args(args)
        results = [price(arrays, d, runtime=runtime) for d in devices]
    by = {"module": "scope", "op": "op", "kind": "kind"}[args.by]
    plot_note = ""
    if args.plot:
        from sizeup.report.plots import plot_roofline

        written, note = plot_roofline(results[0], args.plot)
        plot_note = ", ".join(written) + (f" ({note})" if note else "")
    if args.json:
        total = report.total
        emit_json({
            "model": report.ledger.name, "mode": report.mode, "dtype": report.dtype,
            "total": total.to_dict(),
            "devices": [calibrated_dict(r, by, args.depth) for r in results],
            "assumptions": list(report.assumptions) + [
                "per op: time = max(compute, memory, launch overhead) on GPUs and accelerators (dispatch overlaps "
                "execution), max(compute, memory) + overhead on CPUs",
                "ops run one after another (no overlap between ops, no fusion beyond what the trace shows)"],
        })
        return 0
    print(render_roofline(report, results, by, args.depth))
    if args.plot:
        print(f"\nroofline chart written to {plot_note}")
    return 0


def calibrated_dict(result, by: str, depth: int | None) -> dict:
    """The device's roofline as JSON, its total time the calibrated range (price/ranges_table.traced) with what
    backs it; the per-op times stay the efficiency table's."""
    from sizeup.price.ranges_table import traced

    data = result.to_dict(by, depth, ops=True)
    span, backing = traced(result.total_s, result.runtime, result.device)
    if result.compute_known:
        data["time_s"] = span.to_dict()
    data["backing"] = backing.to_dict()
    return data


def render_roofline(report, results, by: str, depth: int | None) -> str:
    flops_rows = report.ledger.by_scope(depth) if by == "scope" else (
        report.ledger.by_op() if by == "op" else report.ledger.by_kind())
    per_device = [r.by(by, depth) for r in results]
    names = list(per_device[0])
    if by != "scope":
        names.sort(key=lambda n: -per_device[0][n]["time_s"].typical)
    rows = []
    for name in names:
        shown = (("  " * name.count(".") + name.rpartition(".")[2]) if name else f"{report.ledger.name} (total)") \
            if by == "scope" else name
        t = flops_rows.get(name)
        row = [shown, f"{t.arithmetic_intensity:.1f}" if t else ""]
        for data in per_device:
            cell = data[name]
            row += [format_seconds(cell["time_s"].typical), cell["bound"], f"{cell['share']:.1%}"]
        rows.append(row)
    headers = [{"scope": "module", "op": "op", "kind": "kind"}[by], "FLOP/B"]
    for r in results:
        headers += [r.device.id, "bound", "share"]
    lines = [render_table(headers, rows, right=[False, True] + [True, False, True] * len(results),
                          title=f"{report.ledger.name}: {report.mode}, {report.dtype}")]
    lines.append("")
    from sizeup.price.ranges_table import traced

    for r in results:
        t, backing = traced(r.total_s, r.runtime, r.device)
        ridge = {p: v for p, v in (r.to_dict()["ridge_points"]).items() if v}
        ridge_text = ", ".join(f"{p} {v:,.0f}" for p, v in ridge.items())
        lines.append(f"{r.device.name}: {format_seconds(t.typical)} (range {format_seconds(t.low)} - "
                     f"{format_seconds(t.high)}); ridge points FLOP/B: {ridge_text or 'n/a'}")
        lines.append(f"  overhead: {format_seconds(r.overhead_bound_s)} of ops bound by the per-op overhead "
                     f"({format_seconds(r.efficiency.overhead_s.typical)} per kernel"
                     + (f", runtime {r.runtime}" if r.runtime else ", the device kind's generic launch cost")
                     + (f"; + {format_seconds(r.fixed_s.typical)} graph launch" if r.fixed_s.typical else "") + ")")
        lines.append(f"  range: {backing.text}")
        lines.extend(f"  note: {n}" for n in r.notes)
    lines.append("assumption: per op, time = max(compute, memory, launch overhead) on GPUs and accelerators, "
                 "max(compute, memory) + overhead on CPUs; ops run one after another")
    lines.append(f"assumption: efficiencies from {results[0].efficiency.origin}")
    return "\n".join(lines)
