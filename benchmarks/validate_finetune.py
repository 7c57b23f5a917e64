"""Predicted vs published fine-tuning measurements (tests/validation/finetune_measurements.yaml), each row priced
through the command line a user would type: the row's `command` is parsed by `sizeup train`'s own parser and
estimated exactly as the CLI does, nothing else (no per-row settings outside the command).

Metrics, as each source measured them:
- peak_allocated_bytes: torch.cuda.max_memory_allocated -> memory.per_gpu.allocated_bytes
- peak_reserved_bytes:  torch.cuda.max_memory_reserved  -> memory.per_gpu.total_bytes (range: total_range_bytes)
- nvml_used_bytes:      nvidia-smi / NVML "used" of the process -> memory.per_gpu.process_bytes (reserved + CUDA
                        context); a row whose source measured its own context states it as `cuda_context_bytes`,
                        which then replaces sizeup's (data/training/cuda_context.yaml)
- tokens_per_s_per_gpu: real tokens per second per GPU; processed_tokens_per_s: positions incl. padding, all GPUs
- samples_per_s:        sequences per second, all GPUs
Targets (issue 29): fine-tuning memory median |error| <= 12%, speed <= 15%. The one table fitted on published runs is
the allocator reserve (data/training/allocator_reserve.yaml, whose observations include the fms-acceleration and
Liger sources); the leave-one-source-out table prices each row with it re-derived without the row's own source.
Run: python benchmarks/validate_finetune.py [--rows] [--source NAME]
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from sizeup.cli.main import build_parser  # noqa: E402
from sizeup.api.training import training_config  # noqa: E402
from sizeup.cli.commands.train import train_options  # noqa: E402
from sizeup.hardware.catalog import load_catalog  # noqa: E402
from sizeup.ingest.hf_config import load_model  # noqa: E402
from sizeup.ranges import Range  # noqa: E402
from sizeup.workload.training import estimate_training  # noqa: E402
from sizeup.workload.training.allocator import reserve_range, reserve_regime  # noqa: E402

DATA = ROOT / "tests" / "validation" / "finetune_measurements.yaml"
MEMORY = ("peak_allocated_bytes", "peak_reserved_bytes", "nvml_used_bytes")
SPEED = ("tokens_per_s_per_gpu", "processed_tokens_per_s", "samples_per_s")


def load() -> tuple[dict, list[dict]]:
    data = yaml.safe_load(DATA.read_text())
    return data["sources"], data["rows"]


@lru_cache(maxsize=None)
def estimate(command: str, exclude: str | None = None):
    """The estimate `command` (a `sizeup train ...` line) prints, computed in-process. `exclude`: a source whose
    observations are left out of the one table fitted on published runs (the allocator reserve,
    data/training/allocator_reserve.yaml), for leave-one-source-out."""
    argv = shlex.split(command)
    if argv[:2] != ["sizeup", "train"]:
        raise ValueError(f"{command!r}: expected a 'sizeup train ...' command")
    args = build_parser("train").parse_args(argv[1:])
    catalog = _catalog()
    path = ROOT / args.model
    arch = load_model(str(path) if path.exists() else args.model)
    options = train_options(args)
    cfg = training_config(options, options.method)
    if exclude is not None and cfg.allocator_reserve == "observed":
        cfg = replace(cfg, allocator_reserve=reserve_range(reserve_regime(cfg), exclude))
    return estimate_training(arch, catalog.device(args.device), cfg)


@lru_cache(maxsize=1)
def _catalog():
    return load_catalog(include_user=False)


def predict(row: dict, exclude: str | None = None) -> tuple[float, Range]:
    """(typical, range) of the row's metric as sizeup prints it for the row's command."""
    e = estimate(row["command"], exclude)
    m, gpus = e.memory, e.config.parallel.gpus
    metric = row["metric"]
    if metric == "peak_allocated_bytes":
        return float(m.allocated_bytes), Range.exact(float(m.allocated_bytes))
    if metric == "peak_reserved_bytes":
        return float(m.total_bytes), m.total_range
    if metric == "nvml_used_bytes":
        if row.get("cuda_context_bytes") is not None:
            ctx = float(row["cuda_context_bytes"])
            r = m.total_range
            return m.total_bytes + ctx, Range(r.low + ctx, r.typical + ctx, r.high + ctx)
        return m.process_range.typical, m.process_range
    if metric == "tokens_per_s_per_gpu":
        r = e.tokens_per_s.scale(1 / gpus)
        return r.typical, r
    if metric == "processed_tokens_per_s":
        return e.processed_tokens_per_s.typical, e.processed_tokens_per_s
    if metric == "samples_per_s":
        r = e.step_s.inverse(e.global_batch)
        return r.typical, r
    raise ValueError(f"row {row['id']}: unknown metric {metric!r}")


def errors(rows: list[dict], loso: bool = False) -> list[dict]:
    out = []
    for row in rows:
        typical, rng = predict(row, row["source"] if loso else None)
        out.append({**row, "predicted": typical, "error": typical / row["value"] - 1,
                    "inside": rng.low <= row["value"] <= rng.high})
    return out


def summary(results: list[dict], key) -> dict[str, dict]:
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(key(r), []).append(r)
    out = {}
    for name, rs in sorted(groups.items()):
        abs_err = sorted(abs(r["error"]) for r in rs)
        out[name] = {"rows": len(rs), "median": statistics.median(abs_err),
                     "p90": abs_err[min(len(abs_err) - 1, round(0.9 * (len(abs_err) - 1)))],
                     "bias": statistics.median(r["error"] for r in rs),
                     "inside": sum(r["inside"] for r in rs) / len(rs)}
    return out


def kind(r: dict) -> str:
    return "memory" if r["metric"] in MEMORY else "speed"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", action="store_true")
    parser.add_argument("--source")
    args = parser.parse_args()
    sources, rows = load()
    rows = [r for r in rows if not args.source or r["source"] == args.source]
    results = errors(rows)
    if args.rows:
        print("| id | metric | measured | predicted | error | in range |")
        print("|---|---|---:|---:|---:|:-:|")
        for r in results:
            print(f"| {r['id']} | {r['metric']} | {r['value']:,.4g} | {r['predicted']:,.4g} | {r['error']:+.1%} | "
                  f"{'yes' if r['inside'] else 'no'} |")
    for title, key in (("kind", kind), ("kind, metric", lambda r: f"{kind(r)}: {r['metric']}"),
                       ("kind, source", lambda r: f"{kind(r)}: {r['source']}")):
        print(f"\n| {title} | rows | median abs error | p90 | median bias | inside range |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, s in summary(results, key).items():
            print(f"| {name} | {s['rows']} | {s['median']:.1%} | {s['p90']:.1%} | {s['bias']:+.1%} | "
                  f"{s['inside']:.0%} |")
    loso = errors(rows, loso=True)
    print("\nleave-one-source-out: the allocator reserve is the one table fitted on published runs (it includes the "
          "fms-acceleration and Liger observations); here each row is priced with it re-derived without the row's source.")
    print("\n| kind, source (LOSO) | rows | median abs error | p90 | median bias | inside range |")
    print("|---|---:|---:|---:|---:|---:|")
    for key in (kind, lambda r: f"{kind(r)}: {r['source']}"):
        for name, s in summary(loso, key).items():
            print(f"| {name} | {s['rows']} | {s['median']:.1%} | {s['p90']:.1%} | {s['bias']:+.1%} | {s['inside']:.0%} |")
    print("sources: " + "; ".join(f"{k}: {v['title']}" for k, v in sources.items()))


if __name__ == "__main__":
    main()
