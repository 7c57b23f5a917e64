"""Run a row's command line through sizeup's own CLI (its parser, its command, its `--json` output) in this process,
and read the figure the row's metric is compared with. Nothing about a row reaches the estimate except its command.

A metric names the figure of the JSON a user would read (METRICS); its kind (decode, prefill, serving_throughput,
memory, training_step, training_memory, traced_model, weights) is the kind of the calibrated range
(sizeup.price.ranges_table) it is judged under."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from .rows import ROOT, Row


class RowError(Exception):
    """The command of a row failed (its one-line error)."""


@dataclass(frozen=True)
class Prediction:
    typical: float
    low: float
    high: float

    @classmethod
    def of(cls, r: dict, scale: float = 1.0, add: float = 0.0) -> Prediction:
        lo, ty, hi = sorted((r["low"] * scale + add, r["typical"] * scale + add, r["high"] * scale + add))
        return cls(ty, lo, hi)

    @classmethod
    def exact(cls, value: float) -> Prediction:
        return cls(float(value), float(value), float(value))


@dataclass(frozen=True)
class Metric:
    kind: str
    figure: str
    """Where the figure is in the command's --json, as documentation."""
    extract: Callable[[dict, Row], Prediction | None]
    time: bool = False
    """A time (seconds): its ratio to the measurement is the inverse of a rate's."""


def run_json(command: str) -> dict:
    """The JSON object `command --json` prints, run in this process from the repository root (so the rows' relative
    config paths resolve). Raises RowError with the command's own one-line error."""
    return json.loads(_run(command, _state_key()))


_STATE: list[str] = [""]
"""A label of the fitted tables currently swapped in (tables.py), part of the cache key."""


def _state_key() -> str:
    return _STATE[0]


@contextlib.contextmanager
def state(label: str):
    """Cache results under `label` while fitted tables are swapped (leave-one-source-out)."""
    saved = _STATE[0]
    _STATE[0] = label
    try:
        yield
    finally:
        _STATE[0] = saved


@lru_cache(maxsize=None)
def _run(command: str, _state: str) -> str:
    from sizeup.cli.main import main

    argv = shlex.split(command)[1:] + ["--json"]
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(cwd)
    text = out.getvalue()
    if code not in (0, 2):  # 2: `sizeup estimate` of a configuration that does not fit (an answer)
        try:
            message = json.loads(text)["error"]["message"]
        except Exception:
            message = (err.getvalue() or text).strip().splitlines()[-1:] or [f"exit {code}"]
            message = message[0]
        raise RowError(f"{command}: {message}")
    return text


def clear_cache() -> None:
    _run.cache_clear()


# ---- metrics -------------------------------------------------------------------------------------------------------

def _priced(block: dict | None) -> bool:
    return bool(block) and block.get("compute_priced", True)


def _decode(j: dict, row: Row) -> Prediction | None:
    d = j.get("decode")
    return Prediction.of(d["per_sequence_tokens_per_s"]) if _priced(d) else None


def _prefill(j: dict, row: Row) -> Prediction | None:
    p = j["prefill"]
    return Prediction.of(p["tokens_per_s"]) if _priced(p) else None


def _batch_throughput(j: dict, row: Row) -> Prediction | None:
    """Generated tokens per second of a static batch, end to end: batch x output over TTFT + output x TPOT (the
    estimate's `throughput` figure when it has one)."""
    if j.get("throughput"):
        return Prediction.of(j["throughput"]["tokens_per_s"])
    if not (_priced(j["prefill"]) and _priced(j.get("decode"))):
        return None
    b, n = j["config"]["batch"], j["config"]["output_tokens"]
    ttft, tpot = j["prefill"]["latency_s"], j["decode"]["latency_per_token_s"]
    return Prediction(*(b * n / (ttft[k] + n * tpot[k]) for k in ("typical", "high", "low")))


def _load(key: str) -> Callable[[dict, Row], Prediction | None]:
    """A figure of throughput under load (`--concurrency N|inf`, `--rps R`: the JSON's `throughput_under_load`)."""
    def extract(j: dict, row: Row) -> Prediction | None:
        load = j.get("throughput_under_load")
        return Prediction.of(load[key]) if load else None
    return extract


def _latency(key: str) -> Callable[[dict, Row], Prediction | None]:
    """TTFT, TPOT or end-to-end latency: under load where the command gives a load, else the estimate's own
    (TTFT = prefill, TPOT = one decode step, end to end = TTFT + (output - 1) x TPOT)."""
    def extract(j: dict, row: Row) -> Prediction | None:
        load = j.get("throughput_under_load")
        if load:
            return Prediction.of(load[key])
        prefill, decode = j["prefill"], j.get("decode")
        if key == "ttft_s":
            return Prediction.of(prefill["latency_s"]) if _priced(prefill) else None
        if not (_priced(decode) and _priced(prefill)):
            return None
        tpot = decode["latency_per_token_s"]
        if key == "tpot_s":
            return Prediction.of(tpot)
        n = max(j["config"]["output_tokens"] - 1, 0)
        return Prediction(*(prefill["latency_s"][k] + n * tpot[k] for k in ("typical", "low", "high")))
    return extract


def _weights(j: dict, row: Row) -> Prediction:
    """The weights one device holds (`weights_bytes`: a tensor-parallel rank's share)."""
    return Prediction.exact(j["memory"]["weights_bytes"])


def _model_file(j: dict, row: Row) -> Prediction:
    """The model's weights wherever they are held (a file's size): every role's bytes, the token embedding an engine
    keeps in CPU RAM included (llama.cpp), not only the device's share (`weights_bytes`)."""
    memory = j["memory"]
    roles = memory.get("weights_by_role_bytes")
    return Prediction.exact(sum(roles.values()) if roles else memory["weights_bytes"])


def _inference_total(j: dict, row: Row) -> Prediction:
    m = j["memory"]
    return Prediction.of(m["total_range_bytes"]) if "total_range_bytes" in m else Prediction.exact(m["total_bytes"])


def _vllm_peak(j: dict, row: Row) -> Prediction:
    m = j["memory"]
    return Prediction.exact(m["activations_bytes"] + m["multimodal_profile_bytes"])


def _vllm_kv(j: dict, row: Row) -> Prediction:
    return Prediction.exact(j["memory"]["kv_cache_bytes"])


def _tower(j: dict, row: Row) -> Prediction | None:
    return Prediction.of(j["tower"]["latency_s"]) if _priced(j["prefill"]) and j.get("tower") else None


def _images_per_s(j: dict, row: Row) -> Prediction:
    argv = row.argv
    batch = int(argv[argv.index("--input") + 1].split("x")[0])
    t = j["devices"][0]["time_s"]
    return Prediction(batch / t["typical"], batch / t["high"], batch / t["low"])


def _train_mem(key: str, range_key: str | None = None) -> Callable[[dict, Row], Prediction]:
    def extract(j: dict, row: Row) -> Prediction:
        m = j["memory"]["per_gpu"]
        ctx = float(row.get("cuda_context_bytes") or 0)
        if range_key and range_key in m:
            return Prediction.of(m[range_key], add=ctx)
        return Prediction.exact(m[key] + ctx)
    return extract


def _nvml(j: dict, row: Row) -> Prediction:
    """nvidia-smi's used memory of the process: reserved + the CUDA context; a source that measured its own context
    states it (cuda_context_bytes), which then replaces sizeup's (data/training/cuda_context.yaml)."""
    m = j["memory"]["per_gpu"]
    if row.get("cuda_context_bytes") is not None:
        return Prediction.of(m["total_range_bytes"], add=float(row.get("cuda_context_bytes")))
    return Prediction.of(m["process_bytes"])


def _samples_per_s(j: dict, row: Row) -> Prediction:
    s, b = j["step"]["latency_s"], j["config"]["global_batch"]
    return Prediction(b / s["typical"], b / s["high"], b / s["low"])


METRICS: dict[str, Metric] = {
    # sizeup estimate
    "decode_tokens_per_s": Metric("decode", "decode.per_sequence_tokens_per_s", _decode),
    "prefill_tokens_per_s": Metric("prefill", "prefill.tokens_per_s", _prefill),
    "total_decode_tokens_per_s": Metric("serving_throughput", "throughput.tokens_per_s (batch x output / (TTFT + "
                                                              "output x TPOT))", _batch_throughput),
    "output_tokens_per_s_at_load": Metric("load_throughput", "throughput_under_load.output_tokens_per_s",
                                          _load("output_tokens_per_s")),
    "input_tokens_per_s_at_load": Metric("load_throughput", "throughput_under_load.input_tokens_per_s",
                                         _load("input_tokens_per_s")),
    "total_tokens_per_s_at_load": Metric("load_throughput", "throughput_under_load.total_tokens_per_s",
                                         _load("total_tokens_per_s")),
    "requests_per_s": Metric("load_throughput", "throughput_under_load.requests_per_s", _load("requests_per_s")),
    "ttft_s": Metric("serving_latency", "throughput_under_load.ttft_s (else prefill.latency_s)", _latency("ttft_s"),
                     time=True),
    "tpot_s": Metric("serving_latency", "throughput_under_load.tpot_s (else decode.latency_per_token_s)",
                     _latency("tpot_s"), time=True),
    "e2e_latency_s": Metric("serving_latency", "throughput_under_load.e2e_latency_s (else TTFT + (output - 1) x "
                                               "TPOT)", _latency("e2e_latency_s"), time=True),
    "vision_tower_latency_s": Metric("prefill", "tower.latency_s", _tower, time=True),
    "encoder_latency_s": Metric("prefill", "tower.latency_s", _tower, time=True),
    "model_file_bytes": Metric("weights", "memory.weights_by_role_bytes summed (counted)", _model_file),
    "weights_bytes": Metric("weights", "memory.weights_bytes (counted)", _weights),
    "peak_memory_bytes@estimate": Metric("memory", "memory.total_range_bytes", _inference_total),
    "vllm_peak_activation_bytes": Metric("memory_component", "memory.activations_bytes + "
                                                             "memory.multimodal_profile_bytes", _vllm_peak),
    "vllm_kv_cache_bytes": Metric("memory_component", "memory.kv_cache_bytes", _vllm_kv),
    # sizeup roofline
    "images_per_s": Metric("traced_model", "batch / devices[0].time_s", _images_per_s),
    # sizeup train
    "mfu": Metric("training_step", "mfu", lambda j, r: Prediction.of(j["mfu"])),
    "tokens_per_s_per_gpu": Metric("training_step", "throughput.tokens_per_s_per_gpu",
                                   lambda j, r: Prediction.of(j["throughput"]["tokens_per_s_per_gpu"])),
    "processed_tokens_per_s": Metric("training_step", "throughput.processed_tokens_per_s",
                                     lambda j, r: Prediction.of(j["throughput"]["processed_tokens_per_s"])),
    "step_time_s": Metric("training_step", "step.latency_s", lambda j, r: Prediction.of(j["step"]["latency_s"]),
                          time=True),
    "samples_per_s": Metric("training_step", "global batch / step.latency_s", _samples_per_s),
    "peak_memory_bytes@train": Metric("training_memory", "memory.per_gpu.total_range_bytes",
                                      _train_mem("total_bytes", "total_range_bytes")),
    "peak_reserved_bytes": Metric("training_memory", "memory.per_gpu.total_range_bytes",
                                  _train_mem("total_bytes", "total_range_bytes")),
    "peak_allocated_bytes": Metric("training_memory", "memory.per_gpu.allocated_range_bytes",
                                   _train_mem("allocated_bytes", "allocated_range_bytes")),
    "nvml_used_bytes": Metric("training_memory", "memory.per_gpu.process_bytes", _nvml),
}
COUNTED_KINDS = ("weights", "memory_component")
"""Kinds without a range of their own: a count (DESIGN.md's JSON conventions), or a part of the memory total (vLLM's
profiled peak, its KV pool) checked for itself."""


def metric_of(row: Row) -> Metric:
    key = f"{row.metric}@{row.verb}"
    if key in METRICS:
        return METRICS[key]
    if row.metric in METRICS:
        return METRICS[row.metric]
    raise ValueError(f"row {row.id}: unknown metric {row.metric!r} for 'sizeup {row.verb}' "
                     f"(known: {', '.join(sorted(METRICS))})")


def predict(row: Row) -> Prediction | None:
    """The row's figure as its command prints it (None: the estimate leaves it unknown, e.g. a device without a
    compute peak)."""
    return metric_of(row).extract(run_json(row.command), row)


@dataclass(frozen=True)
class Context:
    """Where a row sits in the range table: its kind, engine (serving engine, training framework or runtime),
    device class (hardware.segments), and what widens a range when no row backs it."""
    kind: str
    engine: str
    device_class: str
    device: str
    model_type: str
    derived_peak: bool
    release: str = ""
    """The engine release the command names (`--engine vllm@0.6`), '' for none."""


def context(row: Row) -> Context:
    """The row's cell, read from its own command (parsed by the CLI's parser) and the catalog."""
    from sizeup.engines.defaults import default_for_segment
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.segments import segment_of

    args = _parse(row.command)
    device = load_catalog(include_user=False).device(args.device.split(",")[0])
    release = ""
    if row.verb == "estimate":
        named = args.engine or default_for_segment(segment_of(device))[0]
        engine = ranges_engine_key(named, args.backend, device)
        release = (args.engine or "").partition("@")[2]
        model_type = _model_type(args.model)
    elif row.verb == "train":
        engine = training_engine_key(args.framework, args.method or "full", args.gpus or 1)
        model_type = _model_type(args.model)
    else:
        engine, model_type = args.runtime or "generic", "traced"
    from sizeup.price.ranges_table import peak_derived

    return Context(kind=metric_of(row).kind, engine=engine, device_class=segment_of(device), device=device.id,
                   model_type=model_type, derived_peak=peak_derived(device), release=release)


def training_engine_key(framework: str | None, method: str, gpus: int = 1) -> str:
    """The range table's key of a training row: the framework its estimate runs (a LoRA / QLoRA row naming none runs
    the default fine-tuning framework, workload/frameworks.py framework_for), its method and regime."""
    from sizeup.price.ranges_table import training_key
    from sizeup.workload.frameworks import framework_for

    return training_key(framework_for(framework, method)[0], method, gpus)


def ranges_engine_key(engine: str, backend: str | None, device) -> str:
    from sizeup.price.ranges_table import engine_key

    return engine_key(engine, backend, device)


@lru_cache(maxsize=None)
def _parse(command: str):
    from sizeup.cli.main import build_parser

    argv = shlex.split(command)
    return build_parser(argv[1]).parse_args(argv[1:])


@lru_cache(maxsize=None)
def _model_type(model: str) -> str:
    from sizeup.ingest.hf_config import load_model

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return load_model(model).model_type
    finally:
        os.chdir(cwd)
