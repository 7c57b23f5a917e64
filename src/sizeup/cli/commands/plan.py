"""`sizeup plan SCENARIO.yaml` (or `sizeup plan MODEL --task chat --users N …`): the compute
requirement sheet. Exit code 2 when no configuration meets the scenario."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sizeup.cli.commands.hw import add_catalog_argument
from sizeup.cli.flags import SLA_S as _SLA_S, TOKENS as _TOKENS, exclusive, shown_flag
from sizeup.errors import EXIT_NO_PLAN
from sizeup.files import write_file
from sizeup.units import MAX_REQUESTS_PER_S, MAX_TRAINING_TOKENS, MAX_USERS, number_flag

NO_CONFIGURATION_MEETS = EXIT_NO_PLAN


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="the cheapest setup that meets the SLA or deadline: the compute requirement sheet",
                       description="SCENARIO is a YAML file (see examples/), or a model name with --task and flags.")
    p.add_argument("scenario", help="SCENARIO.yaml, or a model for a quick plan")
    p.add_argument("--format", choices=["text", "md", "json", "html", "xlsx"], help="default text")
    p.add_argument("--json", action="store_true", help="print one JSON object (the same as --format json)")
    p.add_argument("--out", help="write the sheet to this file (required for xlsx)")
    p.add_argument("--plots", metavar="DIR", help="also write each chart into DIR as SVG, and PNG when cairosvg "
                                              "is installed (the HTML sheet embeds the charts without it)")
    p.add_argument("--deploy", metavar="DIR", help="also write Kubernetes manifests of the plan into DIR")
    p.add_argument("--electricity", metavar="USD_PER_KWH", type=number_flag(minimum=0, maximum=100),
                   help="electricity price for buy vs rent (overrides the scenario's budget.electricity_usd_per_kwh; "
                        "default 0.15 USD/kWh, assumed)")
    quick = p.add_argument_group("quick plan without a file")
    quick.add_argument("--task", choices=["chat", "api", "batch", "finetune", "pretrain", "edge"],
                       help="default chat")
    quick.add_argument("--users", type=number_flag(minimum=1, maximum=MAX_USERS, unit="count"),
                       help="users (chat/api), each sending 20 requests per hour, all in the busiest hour "
                            "(peak = users × 20 / 3600 req/s), of --prompt and --output tokens on average; "
                            "for another rate give --rps or a scenario file with requests_per_user_per_hour")
    quick.add_argument("--rps", type=number_flag(above=0, maximum=MAX_REQUESTS_PER_S),
                       help="peak requests per second (chat/api)")
    quick.add_argument("--prompt", type=_TOKENS, help="prompt tokens per request (chat/api default 800; batch 512; "
                                                      "edge 256: the board's context is prompt + output)")
    quick.add_argument("--output", type=_TOKENS, help="output tokens per request (chat/api default 250; batch 256; "
                                                      "edge 128)")
    quick.add_argument("--ttft-p95", type=_SLA_S, help="SLA: p95 time to first token (seconds, or 500ms)")
    quick.add_argument("--tpot-p95", type=_SLA_S, help="SLA: p95 time per output token (seconds, or 50ms); "
                                                       "--task edge: the per-token latency the board must keep")
    quick.add_argument("--device", action="append", help="allowed device (repeatable); --task edge: the one board")
    quick.add_argument("--tokens", type=number_flag(above=0, maximum=MAX_TRAINING_TOKENS, unit="count"),
                       help="finetune / pretrain: tokens to train on; batch: output tokens to generate (e.g. 1e9)")
    quick.add_argument("--engine", metavar="NAME[@RELEASE]",
                       help="engine of a chat/api/batch/edge plan (default: vllm; llama.cpp on an edge board; "
                            "data/engines/defaults.yaml)")
    p.add_argument("--calibration", metavar="NAME",
                   help="price the device this profile from 'sizeup calibrate' was measured on with its measured "
                        "efficiencies (the device must be in the catalog)")
    p.add_argument("--db", help="run database holding the calibration (default: the user data folder)")
    add_catalog_argument(p)
    exclusive(p, "--users", "--rps", "each sets the request rate; give one")
    exclusive(p, "--json", "--format", "--json is --format json; give one")
    p.set_defaults(func=run)


def plan_options(args: argparse.Namespace):
    """The flags as `sizeup.api.PlanOptions`."""
    from sizeup.api import PlanOptions

    quick = {k: v for k, v in (("task", args.task), ("prompt", args.prompt), ("output", args.output),
                                ("engine", args.engine), ("tokens", args.tokens))
             if v is not None}  # else PlanOptions' defaults
    return PlanOptions(**quick, users=args.users, rps=args.rps, ttft_p95=args.ttft_p95, tpot_p95=args.tpot_p95,
                       devices=tuple(args.device or ()), electricity=args.electricity, calibration=args.calibration,
                       db=args.db,
                       catalog=tuple(args.catalog))


QUICK_FLAGS = ("task", "users", "rps", "prompt", "output", "ttft_p95", "tpot_p95", "device", "engine", "tokens")
"""The flags of a quick plan (sizeup plan MODEL …), refused beside a scenario file."""


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from sizeup.api import plan
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError

    args.format = args.format or ("json" if args.json else "text")
    if Path(args.scenario).suffix in (".yaml", ".yml"):
        given = [f"--{k.replace('_', '-')}" for k in QUICK_FLAGS if getattr(args, k) not in (None, [])]
        if given:
            raise ConfigError(f"{shown_flag(args, given[0])}: a flag of the quick plan (sizeup plan MODEL …), not read "
                              f"with the scenario file {args.scenario!r}; set it in the file")
    if args.format == "xlsx" and not args.out:
        raise ConfigError("--format xlsx writes a file: give --out SHEET.xlsx")
    report = plan(args.scenario, plan_options(args))
    result, sheet = report.result, report.sheet
    if args.deploy:
        from sizeup.report.deploy import write_deploy

        written = write_deploy(result, args.deploy) if result.meets else []
        print(f"wrote {', '.join(map(str, written))}" if written else
              "--deploy: no configuration meets the scenario, nothing written", file=sys.stderr)
    charts = None
    if args.plots or args.format == "html":
        from sizeup.report.charts import plan_charts

        charts = plan_charts(result)
    if args.plots:
        from sizeup.report.charts.files import write_charts

        paths, note = write_charts(charts, args.plots)
        sheet = replace(sheet, plots=paths)
        print(f"wrote {len(paths)} charts to {args.plots}" + (f" ({note})" if note else ""), file=sys.stderr)
    if args.format == "json":
        emit_json(replace(report, sheet=sheet).to_dict())
    elif args.format == "xlsx":
        from sizeup.report.xlsx import write_xlsx

        write_xlsx(sheet, args.out, result=result)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        if args.format == "md":
            from sizeup.report.markdown import render_markdown as render
        elif args.format == "html":
            from sizeup.report.html import render_html as render
        else:
            from sizeup.report.terminal import render_sheet as render
        text = render(sheet, charts=charts) if args.format == "html" else render(sheet)
        if args.out:
            try:
                write_file(args.out, text, what="--out", error=ConfigError)
            except OSError as e:
                raise ConfigError(f"--out {args.out!r}: cannot write ({e.strerror})") from None
            print(f"wrote {args.out}", file=sys.stderr)
        else:
            print(text)
    return 0 if result.meets else NO_CONFIGURATION_MEETS
