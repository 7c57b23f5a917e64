"""`sizeup runs list|show|export|sync|import`: the measurement runs saved in the run store."""

from __future__ import annotations

import argparse

from sizeup.cli.db import add_db_argument
from sizeup.report.terminal import render_table
from sizeup.units import number_flag

RUN_ID = number_flag(integer=True, minimum=1, maximum=2**63 - 1)
IMPORT_FORMATS = ("auto", "guidellm", "aiperf", "genai-perf", "inference-perf", "vllm-bench")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="saved measurement runs: list, show, export, sync, import")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    ls = verbs.add_parser("list", help="the runs, newest first")
    ls.add_argument("--limit", type=number_flag(integer=True, minimum=1, maximum=10**9), metavar="N",
                    help="only the N newest runs")
    show = verbs.add_parser("show", help="one run with its points and provenance")
    show.add_argument("run_id", type=RUN_ID, metavar="RUN_ID")
    export = verbs.add_parser("export", help="runs as CSV (one row per point) or JSON (runs with points and "
                                             "samples), or to an MLflow tracking server")
    export.add_argument("run_ids", type=RUN_ID, nargs="+", metavar="RUN_ID")
    kind = export.add_mutually_exclusive_group(required=True)
    kind.add_argument("--format", dest="fmt", choices=["csv", "json"], help="output format")
    kind.add_argument("--json", dest="fmt", action="store_const", const="json", help="the same as --format json")
    kind.add_argument("--mlflow", dest="fmt", action="store_const", const="mlflow",
                      help="log each run (params, metrics, provenance tags, and its prediction beside the "
                           "measurement) to MLflow (needs sizeup[mlflow]; MLFLOW_TRACKING_URI or --tracking-uri)")
    export.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    export.add_argument("--tracking-uri", metavar="URI", help="with --mlflow: the tracking server or folder")
    export.add_argument("--experiment", default="sizeup", help="with --mlflow: the experiment name (default sizeup)")
    sync = verbs.add_parser("sync", help="upload the runs kept in the local spool while the database was away")
    sync.add_argument("--spool", metavar="PATH", help="the spool file (default: $SIZEUP_SPOOL, else spool.sqlite "
                                                     "beside the default run store)")
    imp = verbs.add_parser("import", help="store a load tester's result file as a serving run (GuideLLM, AIPerf, "
                                          "GenAI-Perf, inference-perf, vllm bench serve)")
    imp.add_argument("file", metavar="FILE")
    imp.add_argument("--format", dest="source", choices=IMPORT_FORMATS, default="auto",
                     help="the tool that wrote FILE (default: recognised from its content)")
    imp.add_argument("--model", help="the model served, where the file does not say (a preset or Hugging Face id)")
    imp.add_argument("--device-type", metavar="DEVICE", help="the GPU the server ran on (a catalog name: h100, "
                                                             "a100-80g…): what calibration groups it by")
    imp.add_argument("--gpus", type=number_flag(integer=True, minimum=1, maximum=4096), default=1,
                     help="GPUs the server used (default 1)")
    imp.add_argument("--engine", metavar="NAME[@VERSION]", help="the serving engine, e.g. vllm@0.10 (default: what "
                                                                 "the file says, else unknown)")
    imp.add_argument("--host", help="the machine the server ran on (default: unknown)")
    for q in (ls, show, export, sync, imp):
        add_db_argument(q)
    for q in (ls, show, sync, imp):
        q.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.verb == "sync":
        return run_sync(args)
    if args.verb == "import":
        from sizeup.cli.commands.runs_import import run_import

        return run_import(args)
    from sizeup import api
    from sizeup.cli.main import emit_json

    if args.verb == "list":
        listed = api.runs(db=args.db, limit=args.limit)
        if args.json:
            emit_json(listed.to_dict())
        elif not listed.exists:
            print(f"no runs yet ({listed.db} does not exist)")
        elif not listed.runs:
            print(f"no runs in {listed.db}")
        else:
            rows = [[r.id, _time(r.created), r.kind, r.target, r.device, r.provenance.host or "",
                     r.effective_status, r.point_count] for r in listed.runs]
            print(render_table(["id", "started (UTC)", "kind", "target", "device", "host", "status", "points"], rows,
                               right=[True, False, False, False, False, False, False, True]))
            print(f"\n{len(listed.runs)} runs in {listed.db}")
            _spool_note(args.db)
        return 0
    if args.verb == "show":
        record = api.run(args.run_id, db=args.db)
        emit_json(record.to_dict()) if args.json else print(render_run(record))
        return 0
    if args.fmt == "mlflow":
        from sizeup.cli.commands.runs_import import run_mlflow_export
        from sizeup.cli.db import open_reader

        with open_reader(args.db) as store:
            return run_mlflow_export(store, args)
    text = api.export_runs(args.run_ids, args.fmt, db=args.db)
    if args.out:
        from sizeup.errors import ConfigError
        from sizeup.files import write_file

        out = write_file(args.out, text, what="--out", error=ConfigError)  # a FIFO nothing reads: refused
        print(f"wrote {len(args.run_ids)} runs to {out}")
    else:
        print(text, end="")
    return 0


def run_sync(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.errors import MeasureError
    from sizeup.files import user_path
    from sizeup.store import describe_db, resolve_db
    from sizeup.store.spool import spool_path, sync

    spool = user_path(args.spool) if args.spool else spool_path()
    target = resolve_db(args.db)
    if not isinstance(target, str):
        raise MeasureError(f"--db {describe_db(args.db)}: runs are spooled only for a database server "
                           "(postgresql://…); give its URL, or set SIZEUP_DB")
    if not spool.exists():
        report = None
    else:
        from sizeup.store.postgres import PostgresStore
        from sizeup.store.sqlite import SQLiteStore

        with SQLiteStore(spool, create=False) as queue, PostgresStore(target) as server:
            report = sync(queue, server)
    data = {"db": describe_db(args.db), "spool": str(spool), **(report.to_dict() if report else
                                                                 {"runs": 0, "created": 0, "points": 0,
                                                                  "duplicates": 0, "kept": []})}
    if args.json:
        emit_json(data)
        return 0
    if report is None:
        print(f"nothing to sync: no spool at {spool}")
        return 0
    print(f"synced {data['runs']} spooled run(s) to {data['db']}: {data['created']} new, {data['points']} point(s) "
          f"uploaded, {data['duplicates']} already there")
    if data["kept"]:
        print(f"{len(data['kept'])} run(s) still being written stay in the spool (sync again when they finish)")
    return 0


def _spool_note(db: str | None) -> None:
    """Say so when runs wait in the local spool for a server store (`runs sync` uploads them)."""
    from sizeup.store import resolve_db
    from sizeup.store.spool import spool_path

    spool = spool_path()
    if not isinstance(resolve_db(db), str) or not spool.is_file():
        return
    from sizeup.errors import MeasureError
    from sizeup.store.sqlite import SQLiteStore

    try:
        with SQLiteStore(spool, readonly=True) as queue:
            waiting = len(queue.runs())
    except MeasureError:
        return
    if waiting:
        print(f"{waiting} run(s) wait in the local spool {spool}: 'sizeup runs sync' uploads them")


def _time(iso: str) -> str:
    return iso[:19].replace("T", " ")


def _seconds(value: float | None) -> str:
    from sizeup.units import format_seconds

    return "" if value is None else format_seconds(value)


def render_provenance(record) -> list[str]:
    """The provenance lines of `runs show`: what produced the run."""
    p = record.provenance
    engine = " ".join(v for v in (p.engine, p.engine_version) if v) or "unknown"
    lines = [f"provenance: host {p.host or 'unknown'}; engine {engine}; sizeup {p.sizeup_version or 'unknown'}; "
             f"workload {p.workload_class or 'unclassified'} (hash {p.workload_hash or 'not recorded'})"]
    gpu = [f"device type {p.device_type or 'unknown'}"]
    if p.gpu_product:
        gpu.append(f"GPU {p.gpu_product}")
    if p.driver:
        gpu.append(f"driver {p.driver}")
    if p.gpu_clock_mhz is not None:
        clock = f"SM clock {p.gpu_clock_mhz:.0f} MHz"
        if p.gpu_clock_max_mhz is not None:
            clock += f" of {p.gpu_clock_max_mhz:.0f}"
        gpu.append(clock)
    if p.power_limit_w is not None:
        gpu.append(f"power limit {p.power_limit_w:.0f} W")
    lines.append("            " + "; ".join(gpu))
    return lines


def render_run(record) -> str:
    from sizeup.units import format_bytes

    lines = [f"run {record.id}: {record.kind} of {record.target} on {record.device}  "
             f"({record.effective_status}; started {_time(record.created)} UTC)"]
    lines += render_provenance(record)
    if record.writer_gone:
        lines.append("the process writing this run ended before finishing it (killed or crashed): its points "
                     "up to then are kept")
    if record.error:
        lines.append(f"error: {record.error}")
    if record.config:
        lines.append("config: " + ", ".join(f"{k}={v}" for k, v in sorted(record.config.items())))
    if not record.points:
        lines.append("no points")
        return "\n".join(lines)
    rows = [[p.id, "" if p.batch is None else p.batch, "" if p.grad_accumulation is None else p.grad_accumulation,
             p.phase, p.status, _seconds(p.latency_p50_s), _seconds(p.latency_p95_s), _seconds(p.latency_p99_s),
             p.repetitions, "" if p.throughput_per_s is None else f"{p.throughput_per_s:,.4g}",
             "" if p.peak_memory_bytes is None else format_bytes(p.peak_memory_bytes), p.error or ""]
            for p in record.points]
    lines.append(render_table(["point", "batch", "accum", "phase", "status", "p50", "p95", "p99", "reps", "per s",
                               "peak memory", "error"], rows,
                              right=[True, True, True, False, False, True, True, True, True, True, True, False]))
    return "\n".join(lines)
