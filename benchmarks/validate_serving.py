"""Predicted vs published serving engines' figures (issue 28: throughput under load, SGLang, vLLM releases, FP4, new
devices): tests/validation/rows_server_throughput.yaml, the SGLang / vLLM / TensorRT-LLM rows of
rows_sglang_ollama_vllm_versions.yaml (its Ollama rows are the local engines'), rows_fp4.yaml (NVFP4 / MXFP4) and
rows_new_devices.yaml (Arc Pro B60 on vLLM XPU, H200 NVL), rows_rocm_vllm.yaml (vLLM on ROCm, MI300X), rows_mlperf50.yaml
(MLPerf v5.0 checks), rows_check_1206_serve.yaml (out-of-sample checks gathered 2026-12-06) and the vLLM / SGLang /
TensorRT-LLM rows of the held-out rows_check_1205.yaml, each row the `sizeup estimate
... --concurrency N|inf | --rps R` command of its source's setup; tuned and check apart, per kind, and the MLPerf
(v4.1) Offline/Server throughput rows on their own. The engines' data is sourced settings except the figures
benchmarks/validation/engine_fits.py names with their tuned rows (vLLM's host time per request, SGLang's MXFP4 MoE
bandwidth share on Hopper): --loso sets those again without each row's own source.
Run from the repo root: python benchmarks/validate_serving.py [--rows]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402

FILES = ("rows_server_throughput.yaml", "rows_sglang_ollama_vllm_versions.yaml", "rows_fp4.yaml",
         "rows_new_devices.yaml", "rows_check_1205.yaml", "rows_rocm_vllm.yaml", "rows_mlperf50.yaml",
         "rows_check_1206_serve.yaml", "rows_check_1206_audit3.yaml", "rows_trtllm_moe.yaml",
         "rows_check_1206_devices.yaml")
MIXED = ("rows_check_1205.yaml", "rows_check_1206_audit3.yaml")
SERVING = ("vllm", "sglang", "tensorrt-llm")
"""rows_check_1205.yaml (the held-out check set) and rows_check_1206_audit3.yaml (an out-of-sample audit) mix
engines: only their serving engines' rows are priced here, their local engines' rows by validate_local_engines.py."""


def selected() -> list:
    return [r for r in rows.load(rows.files_named(*FILES)) if "--engine ollama" not in r.command
            and (r.file not in MIXED or rows.engine_of(r.argv) in SERVING)]


def main() -> None:
    args = cli.parser(__doc__.splitlines()[0]).parse_args()
    cli.report(selected(), [("role and kind", lambda r: f"{r.row.role} {r.context.kind}"),
                            ("MLPerf v4.1 throughput", lambda r: f"{r.row.role} MLPerf"
                             if r.row.source.startswith("mlperf") and r.context.kind == "load_throughput"
                             else None),
                            ("engine", lambda r: f"{r.row.role} {r.context.engine}"),
                            ("file and kind", lambda r: f"{r.row.role} {r.row.file} {r.context.kind}")],
               show_rows=args.rows, with_loso=args.loso, columns=("role", "engine", "device"))


if __name__ == "__main__":
    main()
