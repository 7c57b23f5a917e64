"""Result files of the load testers teams already run, read as serving measurements: GuideLLM
(`benchmarks.json`), AIPerf (`profile_export_aiperf.json`), GenAI-Perf (`profile_export_genai_perf.json`),
inference-perf (`summary_lifecycle_metrics.json` / `stage_N_lifecycle_metrics.json`) and `vllm bench serve
--save-result` (one JSON object, or one per line with `--append-result`).

Each reader turns one file into `ServingPoint`s (one per benchmark the file holds: a concurrency or rate level)
with TTFT / TPOT / ITL / end-to-end percentiles in seconds, throughput, request counts and token lengths, and
whatever the file says of the model and engine. The file formats are the tools' own, read from their sources
(cited in each reader); the fixtures in tests/measure/importers/ are small files written in those formats.
`store_import` records the result as a serving run ("load" kind, workload class "serving").
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sizeup.errors import ConfigError
from sizeup.measure.importers.common import ImportedResult, ServingPoint

__all__ = ["SOURCES", "ImportedResult", "ServingPoint", "read_result_file", "detect_source", "store_import"]

SOURCES = ("guidellm", "aiperf", "genai-perf", "inference-perf", "vllm-bench")
MAX_BYTES = 512 * 2**20
"""A result file larger than this is refused (GuideLLM keeps sampled requests: files of tens of MB are usual)."""


def _load(path: Path) -> object:
    from sizeup.files import read_regular

    raw = read_regular(path, what="result file", error=ConfigError, limit=MAX_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not a readable text file (byte 0x{raw[e.start]:02x} at offset {e.start:,} is "
                          "not UTF-8)") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as first:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1:
            try:  # vllm bench serve --append-result: one JSON object per line
                return [json.loads(line) for line in lines]
            except (ValueError, RecursionError):
                pass
        raise ConfigError(f"{path}: not JSON ({str(first)[:80]})") from None


def detect_source(data: object) -> str | None:
    """Which tool wrote `data` (a parsed result file), from the keys only that tool writes; None if none."""
    first = data[0] if isinstance(data, list) and data else data
    if not isinstance(first, dict):
        return None
    benchmarks = first.get("benchmarks")
    if isinstance(benchmarks, list) and benchmarks and isinstance(benchmarks[0], dict) \
            and isinstance(benchmarks[0].get("metrics"), dict):
        return "guidellm"
    if isinstance(first.get("successes"), dict) and "load_summary" in first:
        return "inference-perf"
    if "request_throughput" in first and any(k.endswith("_ttft_ms") for k in first):
        return "vllm-bench"
    if isinstance(first.get("time_to_first_token"), dict) or isinstance(first.get("request_latency"), dict):
        config = first.get("input_config") or {}
        if "aiperf_version" in first or "schema_version" in first or "endpoint" in config or "models" in config:
            return "aiperf"
        return "genai-perf"
    return None


def read_result_file(path: str | os.PathLike, source: str = "auto") -> ImportedResult:
    """The serving points of a load tester's result file; `source` names the tool, or "auto"."""
    from sizeup.files import user_path
    from sizeup.measure.importers import aiperf, guidellm, inference_perf, vllm_bench

    file = user_path(path)
    data = _load(file)
    found = detect_source(data)
    if source == "auto":
        if found is None:
            raise ConfigError(f"{file}: not a result file of {', '.join(SOURCES)} (give --format if it is one)")
        source = found
    elif source not in SOURCES:
        raise ConfigError(f"--format {source!r}: expected one of {', '.join(SOURCES)} or auto")
    elif found not in (source, None) and not {found, source} <= {"aiperf", "genai-perf"}:
        raise ConfigError(f"{file}: looks like a {found} file, not {source}")
    reader = {"guidellm": guidellm.read, "aiperf": aiperf.read, "genai-perf": aiperf.read,
              "inference-perf": inference_perf.read, "vllm-bench": vllm_bench.read}[source]
    result = reader(data, file)
    if not result.points:
        raise ConfigError(f"{file}: the {source} file holds no benchmark with successful requests")
    return ImportedResult(source=source, file=str(file), points=result.points, model=result.model,
                          engine=result.engine, engine_version=result.engine_version, tool_version=result.tool_version,
                          notes=result.notes)


def store_import(store, result: ImportedResult, *, model: str | None = None, device_type: str | None = None,
                 gpus: int = 1, engine: str | None = None, host: str | None = None, quant: str = "bf16") -> int:
    """Record an imported result as one serving run (kind "load", one point per benchmark); returns its id."""
    from sizeup.measure.importers.common import record_run

    return record_run(store, result, model=model, device_type=device_type, gpus=gpus, engine=engine, host=host,
                      quant=quant)
