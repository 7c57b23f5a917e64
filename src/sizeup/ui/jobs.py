"""What a UI worker computes: each job reads a request's command line as the CLI reads it
(`cli.main.parse_command`: the same flag converters, so the same text is the same value), calls `sizeup.api`
directly, and answers the verb's `to_dict()` as `--json` prints it (NaN as null). Nothing runs through the CLI's
stdout or exit codes: a configuration that does not fit is a result like any other.

The `*_view` jobs answer what a page shows in one trip: the result (or the one-line refusal of its input, shown
beside the form) and the choices that depend on it (the formats an engine loads on the chosen device). They run
only inside a worker (ui/worker.py), under the source policy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sizeup.ui.bridge import UiError, check_argv, scrub_paths

__all__ = ["JOBS"]


def plain(obj: Any) -> Any:
    """`obj` exactly as `--json` prints it, as JSON data: NaN and infinities as null, other values as text."""
    from sizeup.cli.main import json_text

    return json.loads(json_text(obj))


def _args(root: Path, argv: list[str]):
    from sizeup.cli.main import parse_command

    check_argv(argv, root)
    return parse_command(argv)


def _refusal(e: Exception) -> str:
    """The one line of a refused input (a `SizeupError`); anything else is re-raised as the bug it is."""
    from sizeup.errors import SizeupError, describe_error

    if not isinstance(e, SizeupError):
        raise e
    return scrub_paths(describe_error(e, context="sizeup ui").message)


# ---- estimate ---------------------------------------------------------------------------------------------

def _estimate(root: Path, argv: list[str]) -> dict:
    from sizeup.api import estimate
    from sizeup.cli.commands.estimate import estimate_options

    args = _args(root, argv)
    if args.device is None:  # as the CLI: the model on a few common devices
        from sizeup.cli.commands.estimate_table import table_result

        return plain(table_result(args).to_dict())
    return plain(estimate(args.model, estimate_options(args)).to_dict())


def estimate_view(root: Path, argv: list[str], device: str, engine: str, quant: str) -> dict:
    from sizeup.ui.choices import engine_choices

    try:
        out: dict[str, Any] = {"result": _estimate(root, argv)}
    except Exception as e:  # noqa: BLE001 — a refused input is shown beside the form; a bug is re-raised
        out = {"error": _refusal(e)}
    return out | {"choices": engine_choices(device, engine or None, quant or None)}


# ---- train, fit -------------------------------------------------------------------------------------------

def _train(root: Path, argv: list[str]) -> dict:
    from sizeup.api import train, train_methods
    from sizeup.cli.commands.train import train_options

    args = _args(root, argv)
    options = train_options(args)
    if args.compare:
        return plain(train_methods(args.model, args.compare.split(","), options).to_dict())
    return plain(train(args.model, options).to_dict())


def _fit(root: Path, argv: list[str]) -> dict:
    from sizeup.api import fit

    def listed(text: str | None) -> tuple[str, ...] | None:
        return None if text is None else tuple(t.strip() for t in text.split(",") if t.strip())

    args = _args(root, argv)
    return plain(fit(args.device, task=args.task, models=listed(args.models), engine=args.engine,
                     formats=listed(args.quant), batch=args.batch, prompt=args.prompt, output=args.output,
                     seq=args.seq).to_dict())


# ---- plan -------------------------------------------------------------------------------------------------

def _plan_report(root: Path, argv: list[str]):
    from sizeup.api import plan
    from sizeup.cli.commands.plan import plan_options

    args = _args(root, argv)
    return plan(args.scenario, plan_options(args))


def _plan(root: Path, argv: list[str]) -> dict:
    return plain(_plan_report(root, argv).to_dict())


def plan_view(root: Path, argv: list[str]) -> dict:
    """The plan's JSON and its sheet as the HTML page (charts inline), from one planning."""
    from sizeup.report.charts import plan_charts
    from sizeup.report.html import render_html

    report = _plan_report(root, argv)
    return {"data": plain(report.to_dict()), "html": render_html(report.sheet, charts=plan_charts(report.result))}


def plan_file(root: Path, argv: list[str], fmt: str, key: str) -> str:
    from sizeup.ui.downloads import write_sheet

    return str(write_sheet(_plan_report(root, argv), fmt, root / "downloads" / key))


# ---- runs -------------------------------------------------------------------------------------------------

def _run_id(run_id: Any) -> int:
    if isinstance(run_id, bool) or not isinstance(run_id, int) or not 1 <= run_id <= 2**63 - 1:
        raise UiError(f"run {str(run_id)[:30]}: no such run", 404)
    return run_id


def _runs(root: Path) -> dict:
    from sizeup.api import runs

    return plain(runs().to_dict())


def _run(root: Path, run_id: int) -> dict:
    from sizeup.api import run

    return plain(run(_run_id(run_id)).to_dict())


def _compare_run(root: Path, run_id: int) -> dict:
    from sizeup.api import compare_run

    return plain(compare_run(_run_id(run_id)).to_dict())


def run_view(root: Path, run_id: int) -> dict:
    """A stored run and its comparison with the prediction; a comparison that cannot be made says why."""
    out: dict[str, Any] = {"record": _run(root, run_id)}
    try:
        out["terms"] = _compare_run(root, run_id)
    except Exception as e:  # noqa: BLE001 — the run stands without it; a bug is re-raised
        out["terms_error"] = _refusal(e)
    return out


# ---- flops and roofline -----------------------------------------------------------------------------------

def _flops_report(root: Path, argv: list[str]):
    from sizeup.cli.commands.flops import trace_from_args

    return trace_from_args(_args(root, argv))


def _flops(root: Path, argv: list[str]) -> dict:
    return plain(_flops_report(root, argv).to_dict())


def flops_view(root: Path, argv: list[str], device: str) -> dict:
    """The count (by kind, the heaviest ops, memory) and its roofline on `device`: each op at its intensity and
    attained FLOP/s (report.charts.roofline_data), the time by kind and what bounds it."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.price.roofline import LedgerArrays, price
    from sizeup.report.charts import roofline_data

    report = _flops_report(root, argv)
    priced = price(LedgerArrays.from_ledger(report.ledger), load_catalog().device(device))
    ops, bandwidth, peaks = roofline_data(priced)
    data = report.to_dict()
    heaviest = sorted(data.pop("ops"), key=lambda o: -o.get("flops", 0))[:15]
    data.pop("scopes")
    return {"report": plain(data), "heaviest": plain(heaviest),
            "priced": plain(priced.to_dict("kind", None)),
            "roofline": {"ops": ops, "bandwidth_bytes_per_s": bandwidth, "peaks": peaks}}


# ---- the table of jobs ------------------------------------------------------------------------------------

def _compare(root: Path, options: dict) -> dict:
    from sizeup.ui.compare import compare_devices

    return plain(compare_devices(**options))


def _menus(root: Path) -> dict:
    from sizeup.ui.choices import menus

    return plain(menus())


JOBS = {"estimate": _estimate, "estimate_view": estimate_view, "train": _train, "fit": _fit, "plan": _plan,
        "plan_view": plan_view, "plan_file": plan_file, "runs": _runs, "run": _run, "compare_run": _compare_run,
        "run_view": run_view, "flops": _flops, "flops_view": flops_view, "compare": _compare, "menus": _menus}
"""The only things a worker does; a frame names one and its arguments (the UI's folder comes first)."""
