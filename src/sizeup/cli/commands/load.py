"""`sizeup load URL` (a serving load test) and `sizeup serve-model PRESET --tiny` (the reference server)."""

from __future__ import annotations

import argparse
import sys

from sizeup.cli.db import add_db_argument
from sizeup.cli.flags import COUNT, DURATION_S, PORT, TOKENS, exclusive
from sizeup.report.terminal import render_table
from sizeup.units import MAX_REQUESTS_PER_S, format_seconds, number_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("load", help="load-test an OpenAI-compatible (or plain HTTP) endpoint")
    p.add_argument("url", help="e.g. http://127.0.0.1:8000/v1/chat/completions")
    p.add_argument("--api", default="openai", choices=["openai", "http"])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--rate", type=number_flag(above=0, maximum=MAX_REQUESTS_PER_S),
                      help="open loop: Poisson arrivals per second")
    mode.add_argument("--concurrency", type=number_flag(integer=True, minimum=1, maximum=100_000),
                      help="closed loop: requests in flight")
    p.add_argument("--duration", type=DURATION_S, default="60s", help="how long to send (default 60s; 500ms, 2min, 1h)")
    p.add_argument("--requests", type=COUNT, help="stop after this many requests")
    p.add_argument("--prompts", help="a text file with one prompt per line, or a .jsonl file of {\"prompt\": …} "
                                     "objects (a regular file of at most 16 MiB)")
    p.add_argument("--output", "--max-tokens", dest="max_tokens", type=TOKENS,
                   help="output tokens asked of each request (default 64; --max-tokens is the same flag)")
    p.add_argument("--timeout", type=DURATION_S, default="30s", help="per request (default 30s)")
    p.add_argument("--sla", metavar="SCENARIO.yaml", help="show the scenario's promised percentiles beside the "
                                                         "measured ones")
    add_db_argument(p)
    p.add_argument("--json", action="store_true")
    from sizeup.cli.commands.load_chaos import add_chaos_arguments

    add_chaos_arguments(p)
    p.set_defaults(func=run_load_command)
    exclusive(p, "--api=http", "--prompts", "a plain HTTP endpoint is sent a GET, without prompts")
    exclusive(p, "--api=http", "--max-tokens", "a plain HTTP endpoint is sent a GET, without a token count")

    s = sub.add_parser("serve-model", help="a small OpenAI-compatible server on 127.0.0.1 (tests and demos)")
    s.add_argument("preset", help="a preset of a dense LLaMA-style family (e.g. llama-3.2-1b)")
    s.add_argument("--tiny", action="store_true", help="2 layers, hidden 64: the same family, tiny")
    s.add_argument("--port", type=PORT, default=8000)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--json", action="store_true",
                   help="print where it listens as one JSON object on stdout ({\"url\", \"host\", \"port\"}), "
                        "e.g. to read the port chosen for --port 0")
    s.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from sizeup.measure.serve import serve

    httpd = serve(args.preset, host=args.host, port=args.port, tiny=args.tiny)
    host, port = httpd.server_address[:2]
    url = f"http://{host}:{port}/v1/chat/completions"
    if args.json:
        from sizeup.cli.main import emit_json

        emit_json({"url": url, "host": host, "port": port})
        sys.stdout.flush()
    print(f"serving on {url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


def run_load_command(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.cli.db import open_writer
    from sizeup.measure.load_inputs import check_url, read_prompts, redact_url
    from sizeup.measure.loadtest import LoadConfig, describe_error, run_load

    check_url(args.url)  # before the prompts file is read: the first thing wrong is the first named
    prompts = read_prompts(args.prompts) if args.prompts else None
    cfg = LoadConfig(url=args.url, api=args.api, rate=args.rate, concurrency=args.concurrency,
                     duration_s=args.duration, requests=args.requests, timeout_s=args.timeout,
                     **({"max_tokens": args.max_tokens} if args.max_tokens else {}),
                     **({"prompts": prompts} if prompts else {}))
    promised, scenario = {}, None
    if args.sla:  # a bad scenario is reported before any request is sent
        from sizeup.plan.scenario import load_scenario

        scenario = load_scenario(args.sla)
        promised = scenario.sla.targets
    from sizeup.cli.commands.load_chaos import prepare, render_chaos, run_with_chaos

    chaos_setup, chaos = prepare(args, scenario), None
    from sizeup.cli.progress import Progress

    if cfg.duration_s is not None:
        bar = Progress("load test", budget_s=cfg.duration_s)
    else:
        bar = Progress("load test", total=cfg.requests)
    with bar:
        def progress(finished: int, sent: int) -> None:
            if cfg.duration_s is None:
                bar.step()
            bar.note(f"{finished:,} done, {sent - finished:,} in flight")

        if chaos_setup is not None:
            result, chaos = run_with_chaos(chaos_setup, cfg, progress)
        else:
            result = run_load(cfg, progress=progress)
    data = result.to_dict()
    if chaos is not None:
        data["chaos"] = chaos.to_dict()
    with open_writer(args.db) as store:
        config = {"api": args.api, "rate": args.rate, "concurrency": args.concurrency, "max_tokens": cfg.max_tokens}
        shown = redact_url(args.url)  # no password or token in a store a team shares
        run_id = store.start_run(kind="load", target=shown, device="remote", config=config, environment={},
                                 provenance=load_provenance(shown, config))
        e2e = [r.e2e_s for r in result.ok]
        store.add_point(run_id, batch=args.concurrency, phase="e2e", status="ok" if result.ok else "error",
                        samples_s=e2e, throughput_per_s=data["request_throughput_per_s"],
                        extra={k: data[k] for k in ("ttft_s", "tpot_s", "itl_s", "e2e_s", "errors",
                                                    "token_throughput_per_s")} | {"sla": promised}
                        | ({"chaos": data["chaos"]} if chaos is not None else {}))
        store.finish_run(run_id, "ok")
    data["run_id"] = run_id
    if promised:
        data["sla"] = sla_rows(promised, data)
    if args.json:
        emit_json(data)
        return 0
    rows = []
    for metric in ("ttft", "tpot", "e2e"):
        values = data[f"{metric}_s"]
        rows.append([metric.upper()] + [format_seconds(values[p]) if p in values else "" for p in
                                        ("p50", "p90", "p95", "p99", "p999")])
    print(render_table(["", "P50", "P90", "P95", "P99", "P99.9"], rows,
                       title=f"run {run_id}: {data['requests']} requests, {data['ok']} ok, errors {data['errors'] or 'none'}"))
    print(f"\n{data['request_throughput_per_s']:,.2f} requests/s, {data['token_throughput_per_s']:,.1f} tokens/s "
          f"over {format_seconds(data['elapsed_s'])}")
    for reason, count in sorted(data["errors"].items(), key=lambda kv: -kv[1]):
        print(f"error {reason}: {count:,} requests — {describe_error(reason)}")
    for line in render_sla(data.get("sla", {})):
        print(line)
    if chaos is not None:
        print("\n".join(render_chaos(chaos)))
    return 0


def load_provenance(url: str, config: dict):
    """A load test's provenance: the serving class, this sizeup, the workload's hash; the server's engine and GPU
    are not known to the client (`sizeup runs import` takes them as flags)."""
    from sizeup.measure.provenance import workload_hash
    from sizeup.store import Provenance
    from sizeup import __version__

    return Provenance(workload_class="serving", sizeup_version=__version__,
                      workload_hash=workload_hash("load", url, config))


def sla_rows(promised: dict[str, float], measured: dict) -> dict[str, dict]:
    """{target: {promised_s, measured_s, met}} (measure.serving_compare.sla_rows)."""
    from sizeup.measure.serving_compare import sla_rows as rows

    return rows(promised, measured)


def render_sla(rows: dict[str, dict]) -> list[str]:
    from sizeup.units import spoken_metric

    return [f"SLA {spoken_metric(key)}: promised {format_seconds(row['promised_s'])}, measured "
            f"{format_seconds(row['measured_s']) if row['measured_s'] is not None else 'n/a'} — "
            f"{'met' if row['met'] else 'MISSED'}" for key, row in rows.items()]
