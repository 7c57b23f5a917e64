"""Hostile command lines, regenerated from a seed: numeric and name flags of every command, paths that are not
regular files for every path argument, odd run ids and run stores, sweep specs that try to inject into the
scripts and manifests they become."""

from __future__ import annotations

import json
import os
import re
import random
import sqlite3
from pathlib import Path

from tests.fuzz.redteam.common import DEVICE, hostile_name, sane_json, write
from tests.fuzz.redteam.runner import Case

NUMBERS = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "-1", "0", "-0", "1e30",
           str(2**64), str(10**400), "1.5", "0.5", "abc", "", " ", "0x10", "1_0", "١٢", "½", " 5", "5 ", "--", "1e",
           "+5", "9" * 5000]
NAMES = ["nosuch", "", " ", "x" * 100_000, "9" * 50_000 + "gb", "\x1b[2J", "../../etc/passwd",
         "llama-3.2-1b" * 3000, "ＨＶ", "-", "os:abort", "tempfile:mkdtemp"]
FLAGS = {  # command line, its numeric flags, its name flags
    "estimate": (["estimate", "llama-3.2-1b", "--device", DEVICE, "--json"],
                 ["--gpus", "--batch", "--prompt", "--output", "--context", "--images", "--image-size",
                  "--gpu-layers", "--threads", "--sweep", "--build-date"],
                 ["--device", "--devices", "--quant", "--kv-dtype", "--cpu", "--runtime", "--calibration"]),
    "train": (["train", "llama-3.2-1b", "--device", "h100", "--json"],
              ["--rank", "--gpus", "--nodes", "--tp", "--pp", "--vp", "--ep", "--zero", "--seq", "--mean-seq",
               "--padded-seq", "--micro-batch", "--global-batch", "--tokens", "--epochs", "--dataset-tokens",
               "--network-gbps", "--loss-chunks", "--lora-dropout", "--source-seq"],
              ["--device", "--compare", "--targets", "--offer", "--calibration"]),
    "plan": (["plan", "llama-3.2-1b", "--json"], ["--users", "--rps", "--prompt", "--output", "--ttft-p95",
                                                  "--tpot-p95"], ["--device", "--engine", "--calibration"]),
    "roofline": (["roofline", "no/such/model.py:build", "--device", "h100"], ["--depth", "--top"],
                 ["--device", "--runtime"]),
    "hw show": (["hw", "show"], [], [""]),
    "hw offers": (["hw", "offers"], [], ["--device", "--provider"]),
    "runs list": (["runs", "list"], ["--limit"], []),
    "load": (["load", "http://127.0.0.1:9/v1/chat/completions", "--requests", "1"],
             ["--rate", "--concurrency", "--duration", "--requests", "--output", "--timeout"], []),
    "watch": (["watch", "--duration", "1s", "--pid", str(os.getpid())],
              ["--interval", "--duration", "--threshold-mb-per-hour", "--pid"], []),
    "measure": (["measure", "sizeup.examples.zoo:c2f", "--input", "1x64x8x8", "--budget", "1s"],
                ["--batch", "--grad-acc", "--latency-target", "--budget", "--memory-cap", "--threads", "--prompt",
                 "--context", "--world-size"], ["--device", "--calibration", "--backends"]),
    "calibrate": (["calibrate", "--device-type", "h100"], ["--threads"], ["--device-type", "--runs", "--name"]),
    "serve-model": (["serve-model", "llama-3.2-1b", "--tiny"], ["--port"], ["--host", ""]),
}
EXCLUSIVE = [["plan", "llama-3.2-1b", "--users", "10", "--rps", "2"],
             ["train", "llama-3.2-1b", "--device", "h100", "--tokens", "1e9", "--epochs", "2"],
             ["load", "http://127.0.0.1:9/", "--rate", "1", "--concurrency", "1"],
             ["flops", "x.onnx", "--backward", "--train"],
             ["watch", "--pid", "1", "--", "true"],
             ["runs", "export", "1", "--json", "--mlflow"],
             ["plan", "llama-3.2-1b", "--json", "--format", "md"]]


def _sound_int(text: str, low: int, high: int) -> bool:
    try:
        return low <= int(text) <= high
    except ValueError:
        return False


def flag_cases(rng: random.Random, folder: Path) -> list[Case]:
    cases = []
    for _ in range(110):
        command = rng.choice(list(FLAGS))
        base, numeric, names = FLAGS[command]
        if numeric and (not names or rng.random() < 0.6):
            flag, value = rng.choice(numeric), rng.choice(NUMBERS)
        else:
            flag, value = rng.choice(names), rng.choice(NAMES)
        # a sound value never runs a model, a server or a watch past a second: these flags only take hostile ones
        argv = [*base, value] if flag == "" else [*base, f"{flag}={value}"]
        if command in ("serve-model", "measure") and _sound_int(value, 0, 65535):
            continue  # a port it would serve on, a batch it would measure: not a hostile value
        if command == "watch" and value in ("0.5", "1.5"):
            continue
        fresh = command in ("serve-model", "measure", "watch", "load")
        cls = "quadratic" if len(value) > 1000 else "flags"
        cases.append(Case(f"{command} {flag}={value[:12]!r}x{len(value)}", cls, argv, fresh=fresh, check=sane_json,
                          expect="refuse" if command in ("serve-model", "measure") else "either"))
    for argv in EXCLUSIVE:
        cases.append(Case(" ".join(argv[:1] + argv[-4:]), "flags", argv, expect="refuse"))
    for argv in (["--nosuch"], ["estimate"], ["estimate", "--device"], ["estimate", "--", "--json"], ["runs"],
                 ["hw", "show"], ["plan", "--format=", "x"], ["estimate", "llama-3.2-1b", "--gpus=--"],
                 ["estimate", "llama-3.2-1b", "--json=yes"], ["nosuch"], ["estimate", "llama-3.2-1b", "--dev", DEVICE],
                 [hostile_name(rng)], ["estimate", hostile_name(rng), "--device", DEVICE],
                 ["estimate", "llama-3.2-1b", "--device", hostile_name(rng)]):
        cases.append(Case(f"argv {argv[:3]!r:.40}", "flags", argv, expect="refuse"))
    return cases


# ---- paths ------------------------------------------------------------------------------------------------------------

def _special(path: Path, kind: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dev-null":
        path.symlink_to("/dev/null")
    elif kind == "dev-full":
        path.symlink_to("/dev/full")
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling":
        path.symlink_to(path.parent / "nowhere")
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(os.urandom(2048))
    elif kind == "proc":
        path.symlink_to("/proc/self/status")
    elif kind == "tty":
        path.symlink_to("/dev/tty")
    return path


READS = {  # a path a command reads: its file name and the command line
    "model-config": ("config.json", lambda p: ["estimate", str(p), "--device", DEVICE]),
    "model-folder": ("m", lambda p: ["estimate", str(p), "--device", DEVICE]),
    "model-gguf": ("m.gguf", lambda p: ["estimate", str(p), "--device", DEVICE]),
    "model-safetensors": ("m.safetensors", lambda p: ["estimate", str(p), "--device", DEVICE]),
    "model-onnx": ("m.onnx", lambda p: ["estimate", str(p), "--device", DEVICE]),
    "train-model": ("config.json", lambda p: ["train", str(p), "--device", "h100"]),
    "flops-onnx": ("m.onnx", lambda p: ["flops", str(p)]),
    "roofline-onnx": ("m.onnx", lambda p: ["roofline", str(p), "--device", "h100"]),
    "scenario": ("s.yaml", lambda p: ["plan", str(p)]),
    "catalog-dir": ("cat", lambda p: ["hw", "list", "--catalog", str(p)]),
    "catalog-file": ("cat/dev.yaml", lambda p: ["hw", "list", "--catalog", str(p.parent)]),
    "catalog-offers": ("cat/offers.yml", lambda p: ["hw", "offers", "--catalog", str(p.parent)]),
    "db": ("runs.sqlite", lambda p: ["runs", "list", "--db", str(p)]),
    "db-show": ("runs.sqlite", lambda p: ["runs", "show", "1", "--db", str(p)]),
    "db-estimate": ("runs.sqlite", lambda p: ["estimate", "llama-3.2-1b", "--device", "local", "--calibration", "x",
                                               "--db", str(p)]),
    "import": ("result.json", lambda p: ["runs", "import", str(p), "--db", str(p.parent / "ok.sqlite")]),
    "spool": ("spool.sqlite", lambda p: ["runs", "sync", "--spool", str(p), "--db", str(p.parent / "ok.sqlite")]),
    "sweep-spec": ("spec.yaml", lambda p: ["sweep", str(p), "--emit", "k8s"]),
    "load-prompts": ("p.txt", lambda p: ["load", "http://127.0.0.1:9/v1/chat/completions", "--requests", "1",
                                         "--prompts", str(p), "--db", str(p.parent / "ok.sqlite")]),
    "load-sla": ("s.yaml", lambda p: ["load", "http://127.0.0.1:9/v1/chat/completions", "--requests", "1",
                                      "--sla", str(p), "--db", str(p.parent / "ok.sqlite")]),
    "compare-sla": ("s.yaml", lambda p: ["compare", "1", "--sla", str(p), "--db", str(p.parent / "ok.sqlite")]),
}
WRITES = {  # a path a command writes
    "plan-out": ("sheet.md", lambda p, base: ["plan", "llama-3.2-1b", "--format", "md", "--out", str(p)]),
    "plan-xlsx": ("sheet.xlsx", lambda p, base: ["plan", "llama-3.2-1b", "--format", "xlsx", "--out", str(p)]),
    "plan-plots": ("plots", lambda p, base: ["plan", "llama-3.2-1b", "--plots", str(p)]),
    "plan-deploy": ("deploy", lambda p, base: ["plan", "llama-3.2-1b", "--deploy", str(p)]),
    "export-out": ("runs.csv", lambda p, base: ["runs", "export", "1", "--format", "csv", "--out", str(p), "--db",
                                          str(base / "ok.sqlite")]),
    "sweep-out": ("jobs.yaml", lambda p, base: ["sweep", str(base / "spec-ok.yaml"), "--emit", "k8s", "--out", str(p)]),
    "watch-plot": ("w.png", lambda p, base: ["watch", "--duration", "2s", "--interval", "1s", "--plot", str(p), "--db",
                                       str(base / "ok.sqlite"), "--", "sleep", "1"]),
    "roofline-plot": ("r.svg", lambda p, base: ["roofline", str(base / "ok.onnx"), "--dim", "batch=1",
                                          "--device", "h100", "--plot", str(p)]),
    "db-write": ("runs.sqlite", lambda p, base: ["runs", "import", str(base / "result-ok.json"), "--db", str(p)]),
}
SPEC = "name: s\nimage: i\nqueue: q\nmeasure: {target: llama-3.2-1b}\npoints:\n- {device: h100}\n"


def path_cases(rng: random.Random, folder: Path, ok_result: Path, ok_onnx: bytes) -> list[Case]:
    import contextlib
    import io

    from sizeup.cli.main import main

    cases = []
    write(folder / "ok.onnx", ok_onnx)
    write(folder / "spec-ok.yaml", SPEC)
    write(folder / "result-ok.json", ok_result.read_bytes())
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["runs", "import", str(ok_result), "--db", str(folder / "ok.sqlite"), "--model", "llama-3.1-8b"]) == 0
    kinds = ["fifo", "dev-zero", "dev-null", "folder", "dangling", "loop", "empty", "random", "proc"]
    for role, (name, command) in READS.items():
        for kind in rng.sample(kinds, 4):
            where = folder / f"r-{role}-{kind}"
            path = _special(where / name, kind)
            handled = kind in ("empty", "dangling", "loop") and role in ("db", "db-show", "spool") or \
                kind == "folder" and role in ("catalog-dir", "model-folder")
            cases.append(Case(f"read {role} <- {kind}", "paths", command(path), fresh=True,
                              expect="either" if handled else "refuse"))
    for role, (name, command) in WRITES.items():
        for kind in rng.sample(["fifo", "dev-full", "folder", "dangling", "loop", "dev-null", "tty", "missing-dir",
                                "proc"], 3):
            where = folder / f"w-{role}-{kind}"
            where.mkdir(parents=True)
            path = where / "missing" / name if kind == "missing-dir" else _special(where / name, kind)
            expect = "refuse"
            if kind == "dev-null" and role not in ("plan-plots", "plan-deploy", "db-write") or kind == "dangling" \
                    and role not in ("plan-plots", "plan-deploy") or kind in ("folder", "missing-dir") and \
                    role in ("plan-plots", "plan-deploy") or kind == "missing-dir" and role == "db-write":
                expect = "either"  # /dev/null takes what it is given; a dangling link is created; a folder is made
            cases.append(Case(f"write {role} -> {kind}", "paths", command(path, folder), fresh=True, expect=expect))
    return cases


# ---- run stores ---------------------------------------------------------------------------------------------------------

RUN_IDS = ["-1", "0", "1e3", "abc", "1.5", " 1", "1 ", "０", "١", "9" * 30, str(2**63), str(2**63 - 1), "0x1", "1_0",
           "+1", "", "--", "1;DROP TABLE runs", "1 OR 1=1", "'", "\x1b[2J"]


def _result(model: str, label: str) -> str:
    base = json.loads((Path(__file__).resolve().parents[2] / "measure" / "importers" / "vllm_bench_serve.json")
                      .read_text())
    base.update({"model_id": model, "label": label, "backend": label})
    return json.dumps(base)


def store_cases(rng: random.Random, folder: Path) -> list[Case]:
    from sizeup.cli.main import main

    cases = []
    db = folder / "runs.sqlite"
    hostile = hostile_name(rng)
    result = write(folder / f"{hostile.replace('/', '_')[:40]}.json", _result(hostile, hostile))
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["runs", "import", str(result), "--db", str(db), "--model", "llama-3.1-8b", "--device-type",
                     "h100", "--engine", "vllm@0.10", "--host", hostile])
    assert code == 0, "the seed run of the store cases could not be imported"
    for run_id in RUN_IDS:
        verb = rng.choice([["runs", "show"], ["compare"], ["runs", "export", "--format", "csv", "--out",
                                                           str(folder / "x.csv")]])
        argv = [*verb[:2], run_id, *verb[2:], "--db", str(db)] if verb[0] == "runs" else [*verb, run_id, "--db",
                                                                                          str(db)]
        lenient = run_id.strip().lstrip("+") == "1"  # int() reads ' 1' and '+1' as run 1
        cases.append(Case(f"{verb[-1] if verb[0] == 'compare' else verb[1]} id={run_id[:12]!r}", "store", argv,
                          expect="either" if lenient else "refuse"))
    for fmt, ext in (("csv", ".csv"), ("json", ".json")):
        out = folder / f"export{ext}"
        cases.append(Case(f"export hostile names to {fmt}", "escapes",
                          ["runs", "export", "1", "--format", fmt, "--out", str(out), "--db", str(db)], expect="handle",
                          outputs=[out]))
        cases.append(Case(f"export hostile names to {fmt} stdout", "escapes",
                          ["runs", "export", "1", "--format", fmt, "--db", str(db)], expect="handle"))
    for argv in (["runs", "list"], ["runs", "show", "1"], ["runs", "show", "1", "--json"], ["compare", "1"],
                 ["runs", "list", "--json"]):
        cases.append(Case(f"hostile names: {' '.join(argv)}", "escapes", [*argv, "--db", str(db)],
                          check=sane_json))
    stores = {  # store files that are not what they say
        "random": os.urandom(8192), "text": b"hello\n" * 100,
        "truncated": None, "other-schema": "other", "future-version": "future", "hostile-rows": "rows",
        "dropped-points": "dropped",
    }
    for id, content in stores.items():
        path = folder / f"{id}.sqlite"
        if content is None:
            path.write_bytes(db.read_bytes()[:3000])
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(db.read_bytes())
            with sqlite3.connect(path) as con:
                if content == "other":
                    for (table,) in con.execute("select name from sqlite_master where type='table'").fetchall():
                        con.execute(f'drop table if exists "{table}"')
                    con.execute("create table runs (x)")
                elif content == "future":
                    con.execute("pragma user_version = 999")
                    with_meta = [t for (t,) in con.execute("select name from sqlite_master where type='table'")]
                    if "meta" in with_meta:
                        con.execute("update meta set value = '999'")
                elif content == "rows":
                    con.execute("update runs set status = ?, target = ?", (hostile, hostile))
                elif content == "dropped":
                    con.execute("drop table points")
        for argv in (["runs", "list"], ["runs", "show", "1"], ["runs", "export", "1", "--format", "csv"],
                     ["compare", "1"]):
            cases.append(Case(f"store {id}: {' '.join(argv)}", "store", [*argv, "--db", str(path)]))
    readonly = folder / "ro" / "runs.sqlite"
    readonly.parent.mkdir()
    readonly.write_bytes(db.read_bytes())
    readonly.chmod(0o444)
    readonly.parent.chmod(0o555)
    for argv in (["runs", "list"], ["runs", "show", "1"], ["runs", "import", str(result)]):
        cases.append(Case(f"read-only store: {argv[1]}", "store", [*argv, "--db", str(readonly)]))
    for url in ["", "postgresql://", "postgresql://u@127.0.0.1:1/db", "postgres://u:p@[::1]:1/db", "mysql://x/y",
                "sqlite:///x.sqlite", "file:x.sqlite", "http://127.0.0.1:9/x", ":memory:", "postgresql://u@\x1b[2J/db",
                "postgresql://" + "a" * 10_000, "postgresql://u@127.0.0.1:99999/db", "postgresql://u@host:abc/db",
                "~nosuchuser/x.sqlite", str(folder / "no" / "such" / "dir" / "r.sqlite")]:
        argv = rng.choice([["runs", "list"], ["runs", "show", "1"], ["compare", "1"]])
        cases.append(Case(f"--db {url[:30]!r}", "store", [*argv, "--db", url], fresh=url.startswith("postgres")))
    return cases


# ---- sweep specs --------------------------------------------------------------------------------------------------------

INJECT = ["x; touch PWNED", "$(touch PWNED)", "`touch PWNED`", "x\ntouch PWNED", "x'; touch PWNED; '",
          "x\"\ninjected: true", "{injected: true}", "x\r\ninjected: true", "--db=/tmp/x", hostile_name(random.Random(0))]


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return {str(k) for k in value} | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _no_injection(folder: Path, out: Path | None):
    """No command ran, no spec value became a key of a manifest or a line of a script."""
    def check(result) -> str | None:
        import yaml

        if (folder / "PWNED").exists():
            return "the spec ran a command"
        files = [out] if out is not None and out.is_file() else sorted(out.iterdir()) if out is not None and \
            out.is_dir() else []
        for path in files:
            text = path.read_text()
            if path.suffix in (".yaml", ".yml"):
                try:
                    docs = list(yaml.safe_load_all(text))
                except yaml.YAMLError as e:
                    return f"{path.name} is not YAML ({str(e).splitlines()[0]})"
                if any("injected" in _keys(doc) for doc in docs):
                    return f"a spec value became a key of {path.name}"
            bad = next((line for line in text.splitlines() if re.match(r"\s*touch PWNED($|[ ;&|])", line)), None)
            if bad is not None:
                return f"a spec value became a line of {path.name}: {bad!r}"
        return None
    return check


def sweep_cases(rng: random.Random, folder: Path) -> list[Case]:
    cases = []
    fields = ["name", "image", "queue", "namespace", "db_secret", "measure.target", "measure.batch",
              "measure.budget", "measure.calibration", "points.device", "slurm.partition", "slurm.account",
              "slurm.time", "measure.dim"]
    for i in range(26):
        field = rng.choice(fields)
        value = rng.choice(INJECT)
        spec = {"name": "s", "image": "i", "queue": "q", "measure": {"target": "llama-3.2-1b"},
                "points": [{"device": "h100"}, {"device": "cpu", "batch": "1,2"}],
                "slurm": {"partition": "gpu"}}
        if field.startswith("points."):
            spec["points"][0][field.split(".")[1]] = value
        elif "." in field:
            parent, child = field.split(".")
            spec[parent][child] = value
        else:
            spec[field] = value
        path = write(folder / f"spec{i}.yaml", json.dumps(spec))
        emit = rng.choice(["k8s", "slurm", "json"])
        if emit == "json":
            argv, out = ["sweep", str(path), "--emit", "k8s", "--json"], None
        elif emit == "k8s":
            out = folder / f"jobs{i}.yaml"
            argv = ["sweep", str(path), "--emit", "k8s", "--out", str(out)]
        else:
            out = folder / f"slurm{i}"
            argv = ["sweep", str(path), "--emit", "slurm", "--out", str(out)]
        cases.append(Case(f"{emit} {field}={value[:16]!r}", "sweep", argv, outputs=[out] if out else [],
                          check=_no_injection(folder, out)))
    for id, text in {"numbers": SPEC.replace("{device: h100}", "{device: h100, gpus: .nan}"),
                     "gpus-huge": SPEC.replace("{device: h100}", "{device: h100, gpus: 99999999999999999999}"),
                     "points-many": SPEC.split("points:")[0] + "points:\n" + "- {device: h100}\n" * 20_000,
                     "dup": SPEC + "name: t\n", "yaml11": SPEC.replace("{device: h100}", "{device: h100, gpus: 1:30}"),
                     "threads-neg": SPEC.replace("{target: llama-3.2-1b}", "{target: llama-3.2-1b, threads: -1}"),
                     "prompt-float": SPEC.replace("{target: llama-3.2-1b}", "{target: llama-3.2-1b, prompt: 1.5}"),
                     "unknown-device": SPEC.replace("h100", "h1OO"), "deep": "a: " + "[" * 5000 + "]" * 5000}.items():
        path = write(folder / f"spec-{id}.yaml", text)
        cases.append(Case(f"spec {id}", "sweep", ["sweep", str(path), "--emit", "k8s"], expect="refuse"))
    return cases



# ---- the other commands: watch, serve-model, calibrate, compare, hw -----------------------------------------------------

def misc_cases(rng: random.Random, folder: Path) -> list[Case]:
    db = ["--db", str(folder / "m.sqlite")]
    lines = [
        (["watch", "--pid", "99999999", "--duration", "1s", *db], "refuse"),
        (["watch", "--pid", "0", "--duration", "1s", *db], "refuse"),
        (["watch", "--pid", "-1", "--duration", "1s", *db], "refuse"),
        (["watch", "--pid", str(2**63), "--duration", "1s", *db], "refuse"),
        (["watch", "--duration", "1s", *db, "--", "/no/such/command"], "refuse"),
        (["watch", "--duration", "1s", *db, "--", "\x1b[2J"], "refuse"),
        (["watch", "--duration", "1s", *db, "--"], "refuse"),
        (["watch", "--interval", "2s", "--duration", "1s", *db, "--", "sleep", "1"], "either"),
        (["watch", "--duration", "2s", "--interval", "1s", "--json", *db, "--", "sh", "-c",
          "printf '\\033[2J\\rsizeup: error: forged' >/dev/null; sleep 1"], "either"),
        (["serve-model", "x" * 100_000, "--tiny", "--port", "1"], "refuse"),
        (["serve-model", "../../etc/passwd", "--tiny"], "refuse"),
        (["serve-model", str(folder / "nope.gguf")], "refuse"),
        (["serve-model", "mixtral-8x7b", "--tiny", "--port", "99999"], "refuse"),
        (["serve-model", "bert-base-uncased", "--tiny", "--port", "99999"], "refuse"),
        (["calibrate", "--runs", "1,abc", *db], "refuse"), (["calibrate", "--runs", "-1", *db], "refuse"),
        (["calibrate", "--runs", "9" * 40, *db], "refuse"),
        (["calibrate", "--device-type", hostile_name(rng), *db], "refuse"),
        (["compare", "1", "--calibration", "x" * 100_000, *db], "refuse"),
        (["compare", "1", "--statistic", "nosuch", *db], "refuse"),
        (["hw", "show", "x" * 100_000], "refuse"), (["hw", "show", "9" * 100_000 + "gb"], "refuse"),
        (["hw", "offers", "--provider", "x" * 100_000], "either"), (["hw", "offers", "--device", "a" * 100_000 + "1"],
                                                                   "refuse"),
        (["estimate", "llama-3.2-1b", "--device", "local", "--calibration", "\x1b[2J", *db], "refuse"),
        (["train", "llama-3.2-1b", "--device", "h100", "--offer", "x" * 100_000], "refuse"),
        (["plan", "llama-3.2-1b", "--device", "x" * 100_000], "refuse"),
        (["plan", "llama-3.2-1b", "--engine", "x" * 100_000], "refuse"),
        (["estimate", "llama-3.2-1b", "--devices", "x" * 100_000], "refuse"),
    ]
    return [Case(f"{' '.join(a[:2])[:30]} #{i}", "misc", a, expect=e, fresh=a[0] in ("watch", "serve-model"),
                 check=sane_json) for i, (a, e) in enumerate(lines)]


def changing_cases(rng: random.Random, folder: Path) -> list[Case]:
    """A model file rewritten (in place: same inode, new size and contents) while sizeup reads it, by a writer in
    another process for the case's whole run."""
    import sys

    from tests.ingest.model_files import llama_gguf, safetensors_bytes, safetensors_header

    header, size = safetensors_header({f"model.layers.{i}.w": (64, 64) for i in range(400)})
    files = {"m.gguf": (llama_gguf(), llama_gguf({"llama.block_count": (4, 3)})),
             "m.safetensors": (safetensors_bytes(header, data_bytes=size), safetensors_bytes(header, data_bytes=4)),
             "config.json": (json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                         "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}),
                             "{" + " " * 300_000 + "}")}
    cases = []
    for name, (a, b) in files.items():
        path = write(folder / "changing" / name, a)
        if name == "m.safetensors":
            write(path.parent / "config.json", files["config.json"][0])
        write(folder / f"a-{name}", a)
        write(folder / f"b-{name}", b)
        writer = (f"import time\nsrc=[open({str(folder / f'a-{name}')!r},'rb').read(),"
                  f"open({str(folder / f'b-{name}')!r},'rb').read()]\nend=time.time()+20\ni=0\n"
                  f"while time.time()<end:\n    f=open({str(path)!r},'r+b'); f.truncate(0); f.write(src[i%2]);"
                  f" f.close(); i+=1\n")
        script = write(folder / f"writer-{name}.py", writer)
        for i in range(3):
            argv = ["estimate", str(path), "--device", DEVICE, "--json"]
            cases.append(Case(f"{name} rewritten while read #{i}", "truncated", argv, fresh=True, check=sane_json,
                              background=[sys.executable, str(script)]))
    return cases
