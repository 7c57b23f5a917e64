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
from sizeup.units import MAX_REQUESTS_PER_S, MAX_USERS, number_flag

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
    quick = p.add_argument_group("quick plan without a file")
    quick.add_argument("--task", choices=["chat", "api", "batch", "finetune", "pretrain", "edge"],
                       help="default chat")
    quick.add_argument("--users", type=number_flag(minimum=1, maximum=MAX_USERS, unit="count"),
                       help="users (chat/api), each sending 20 requests per hour, all in the busiest hour "
                            "(peak = users × 20 / 3600 req/s), of --prompt and --output tokens on average; "
                            "for another rate give --rps or a scenario file with requests_per_user_per_hour")
    quick.add_argument("--rps", type=number_flag(above=0, maximum=MAX_REQUESTS_PER_S),
                       help="peak requests per second (chat/api)")
    quick.add_argument("--prompt", type=_TOKENS, help=f"prompt tokens (default {QUICK_DEFAULTS['prompt']})")
    quick.add_argument("--output", type=_TOKENS, help=f"output tokens (default {QUICK_DEFAULTS['output']})")
    quick.add_argument("--ttft-p95", type=_SLA_S, help="SLA: p95 time to first token (seconds, or 500ms)")
    quick.add_argument("--tpot-p95", type=_SLA_S, help="SLA: p95 time per output token (seconds, or 50ms)")
    quick.add_argument("--device", action="append", help="allowed device (repeatable)")
    quick.add_argument("--engine", help="serving engine of a chat/api plan (default vllm)")
    p.add_argument("--calibration", metavar="NAME",
                   help="price the device this profile from 'sizeup calibrate' was measured on with its measured "
                        "efficiencies (the device must be in the catalog)")
    p.add_argument("--db", help="run database holding the calibration (default: the user data folder)")
    add_catalog_argument(p)
    exclusive(p, "--users", "--rps", "each sets the request rate; give one")
    exclusive(p, "--json", "--format", "--json is --format json; give one")
    p.set_defaults(func=run)


QUICK_DEFAULTS = {"task": "chat", "prompt": 800, "output": 250, "engine": "vllm"}
"""A quick plan's values of the flags not given."""
QUICK_FLAGS = ("task", "users", "rps", "prompt", "output", "ttft_p95", "tpot_p95", "device", "engine")


def _quick_scenario(args: argparse.Namespace):
    from sizeup.plan.scenario import parse_scenario

    task = args.task or QUICK_DEFAULTS["task"]
    data = {"name": f"{args.scenario}-{task}", "model": args.scenario, "task": task, "constraints": {}}
    if args.device:
        data["constraints"]["devices"] = args.device
    if task in ("chat", "api"):
        data["constraints"]["engines"] = [args.engine or QUICK_DEFAULTS["engine"]]
        traffic = {"prompt_tokens": args.prompt or QUICK_DEFAULTS["prompt"],
                   "output_tokens": args.output or QUICK_DEFAULTS["output"]}
        if args.rps is not None:
            traffic["peak_requests_per_s"] = args.rps
        else:
            traffic["users"] = 1 if args.users is None else args.users
        data["traffic"] = traffic
        sla = {}
        if args.ttft_p95 is not None:
            sla["ttft_p95_s"] = args.ttft_p95
        if args.tpot_p95 is not None:
            sla["tpot_p95_s"] = args.tpot_p95
        data["sla"] = sla
    return parse_scenario(data, source="command line")


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from sizeup.cli.calibration import calibrated_scope, load_calibration
    from sizeup.cli.main import emit_json
    from sizeup.errors import ConfigError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.plan.recommend import plan_scenario
    from sizeup.api import check_scenario_context
    from sizeup.plan.scenario import load_scenario
    from sizeup.plan.sheet import build_sheet

    path = Path(args.scenario)
    args.format = args.format or ("json" if args.json else "text")
    if path.suffix in (".yaml", ".yml"):
        given = [f"--{k.replace('_', '-')}" for k in QUICK_FLAGS if getattr(args, k) not in (None, [])]
        if given:
            raise ConfigError(f"{shown_flag(args, given[0])}: a flag of the quick plan (sizeup plan MODEL …), not read "
                              f"with the scenario file {args.scenario!r}; set it in the file")
        scenario = load_scenario(path)
    else:
        scenario = _quick_scenario(args)
    if args.format == "xlsx" and not args.out:
        raise ConfigError("--format xlsx writes a file: give --out SHEET.xlsx")
    check_scenario_context(scenario)
    catalog = load_catalog(args.catalog)
    devices = []
    profile = load_calibration(args)
    if profile is not None:
        if not profile.catalog_id:
            raise ConfigError(f"calibration {args.calibration!r} was measured on {profile.device.name}, which is not "
                              "in the catalog: plan prices catalog devices (use estimate/train --device local)")
        devices = [catalog.device(profile.catalog_id)]
    with calibrated_scope(profile, devices) as notes:
        result = plan_scenario(scenario, catalog)
    if notes:
        result = replace(result, assumptions=(*notes, *result.assumptions))
    if args.deploy:
        from sizeup.report.deploy import write_deploy

        written = write_deploy(result, args.deploy) if result.meets else []
        print(f"wrote {', '.join(map(str, written))}" if written else
              "--deploy: no configuration meets the scenario, nothing written", file=sys.stderr)
    sheet = build_sheet(result)
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
        emit_json(sheet.to_dict() | {"plan": result.to_dict()})
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
