"""Predicted vs published vLLM start-up memory (vllm_text_measurements.yaml, vllm_multimodal_measurements.yaml;
check sets): the weights, the profiled activation peak (the larger of the forward step and the dummy sampler phase,
plus a vision-language model's multimodal profile) and the KV memory left, each row the `sizeup estimate ...
--engine vllm` command of the logged `vllm serve` (the figures: memory.weights_bytes, memory.activations_bytes +
memory.multimodal_profile_bytes, memory.kv_cache_bytes).
Run from the repo root: python benchmarks/validate_vllm_memory.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from validation import cli, rows  # noqa: E402


def main() -> None:
    args = cli.parser(__doc__.splitlines()[0]).parse_args()
    cli.report(rows.load(rows.files_named("vllm_*_measurements.yaml")), [("metric", lambda r: r.row.metric)],
               show_rows=True, with_loso=args.loso)


if __name__ == "__main__":
    main()
