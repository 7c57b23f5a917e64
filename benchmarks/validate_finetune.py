"""Predicted vs published fine-tuning measurements (tests/validation/finetune_measurements.yaml): each row is the
`sizeup train ...` command line a user would type from the source's stated conditions, run through sizeup's CLI
(benchmarks/validation/), nothing else.

Metrics, as each source measured them (benchmarks/validation/runner.py METRICS):
- peak_allocated_bytes: torch.cuda.max_memory_allocated -> memory.per_gpu.allocated_bytes
- peak_reserved_bytes:  torch.cuda.max_memory_reserved  -> memory.per_gpu.total_bytes (range: total_range_bytes)
- nvml_used_bytes:      nvidia-smi / NVML "used" of the process -> memory.per_gpu.process_bytes (reserved + CUDA
                        context); a row whose source measured its own context states it as `cuda_context_bytes`,
                        which then replaces sizeup's (data/training/cuda_context.yaml)
- tokens_per_s_per_gpu: real tokens per second per GPU; processed_tokens_per_s: positions incl. padding, all GPUs
- samples_per_s:        sequences per second, all GPUs
Targets (issue 29): fine-tuning memory median |error| <= 12%, speed <= 15%. The one table fitted on published runs is
the allocator reserve (data/training/allocator_reserve.yaml, whose observations include the fms-acceleration and
Liger sources); --loso prices each row with it re-derived without the row's own source.
Run: python benchmarks/validate_finetune.py [--rows] [--source NAME] [--loso]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402

FILES = ("finetune_measurements.yaml", "finetune_single_gpu_measurements.yaml")
MEMORY = ("peak_allocated_bytes", "peak_reserved_bytes", "nvml_used_bytes")
SPEED = ("tokens_per_s_per_gpu", "processed_tokens_per_s", "samples_per_s")


def kind(r) -> str:
    return "memory" if r.row.metric in MEMORY else "speed"


def main() -> None:
    p = cli.parser(__doc__.splitlines()[0])
    p.add_argument("--source")
    args = p.parse_args()
    selected = [r for r in rows.load(rows.files_named(*FILES)) if not args.source or r.source == args.source]
    cli.report(selected, [("kind", kind), ("kind, metric", lambda r: f"{kind(r)}: {r.row.metric}"),
                          ("kind, source", lambda r: f"{kind(r)}: {r.row.source}")],
               show_rows=args.rows, with_loso=args.loso, columns=("source",))
    named = {k: v for f in rows.files_named(*FILES) for k, v in rows.sources(f).items()}
    print("sources: " + "; ".join(f"{k}: {v['title']}" for k, v in named.items()))


if __name__ == "__main__":
    main()
