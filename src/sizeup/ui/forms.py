"""Request fields -> the command line the same request is on the CLI (`--flag=value`, so a value such as '-2'
reaches the flag's own check).

A worker reads that argv with the CLI's own parser (`cli.main.parse_command`: the same converters, so the same
text means the same value) and hands the options to `sizeup.api` (ui/jobs.py). Only the flags listed here are
ever built; options that read or write files (--catalog, --db, --calibration, --sla, --out, --plots) are never
taken from a request. The model is the positional after `--`, so no model name is ever read as an option. Every
field is capped in length (`fields_of`) before it is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlencode

from sizeup.ui.bridge import MAX_UPLOAD_BYTES, UiError

__all__ = ["DEFAULTS", "FIELD_CHARS", "TRAIN_DEFAULTS", "estimate_argv", "fields_of", "fit_argv", "flops_argv",
           "head_of", "number_arg", "plan_fields", "plan_file_argv", "plan_quick_argv", "train_argv", "with_change", "changes_of"]

NAME_CHARS = 256
"""A model, device, format or engine name (units.MAX_NAME_CHARS)."""
FIELD_CHARS = {"model": NAME_CHARS, "device": NAME_CHARS, "devices": 4096, "yaml": 1024 * 1024,
               "scenario": 1024 * 1024, "compare": 64, "sort": 64, "targets": 512, "models": 4096, "offer": NAME_CHARS,
               "input": 512}
"""Longest value read per field; any other field: DEFAULT_FIELD_CHARS (numbers, short choices)."""
DEFAULT_FIELD_CHARS = 128
MAX_FIELD_NAME_CHARS = 64

DEFAULTS = {"model": "llama-3.1-8b", "device": "rtx-4090", "quant": "q4_k_m", "engine": "llama.cpp",
            "kv_dtype": "fp16", "batch": "1", "prompt": "512", "output": "128"}
"""The first screen: llama-3.1-8b on an RTX 4090 in Q4_K_M, so it opens with numbers."""
TRAIN_DEFAULTS = {"model": "llama-3.1-8b", "device": "h100-sxm-80gb", "method": "lora", "tokens": "1e8",
                  "seq": "2048", "rank": "16", "targets": "q_proj,v_proj"}

ESTIMATE_FLAGS = ("device", "quant", "kv_dtype", "engine", "batch", "prompt", "output", "context", "gpus",
                  "gpu_layers")
TRAIN_FLAGS = ("device", "method", "compare", "rank", "targets", "framework", "optimizer", "precision", "recompute",
               "gpus", "nodes", "offer", "seq", "micro_batch", "global_batch", "tokens", "epochs", "zero", "tp", "pp")
_PLAN = ("task", "users", "rps", "prompt", "output", "ttft_p95", "tpot_p95", "engine", "tokens")
_FIT = ("task", "engine", "quant", "batch", "prompt", "output", "seq", "models")


def _flags(fields: Mapping, names) -> list[str]:
    out = []
    for name in names:
        value = str(fields.get(name, "")).strip()
        if value:
            out.append(f"--{name.replace('_', '-')}={value}")
    return out


def fields_of(items: Mapping | Iterable[tuple[str, object]]) -> dict[str, str]:
    """The text fields of a query or form, each within its cap (FIELD_CHARS), else a one-line 413."""
    pairs = items.items() if isinstance(items, Mapping) else items
    out: dict[str, str] = {}
    for name, value in pairs:
        if not isinstance(value, str):
            continue  # an uploaded file: read where the route expects one
        if len(name) > MAX_FIELD_NAME_CHARS:
            raise UiError(f"a field name of {len(name):,} characters: expected at most {MAX_FIELD_NAME_CHARS}", 413)
        cap = FIELD_CHARS.get(name, DEFAULT_FIELD_CHARS)
        if len(value) > cap:
            raise UiError(f"field {name!r}: {len(value):,} characters; expected at most {cap:,}", 413)
        out[name] = value
    return out


def _model(model: str, what: str = "model") -> str:
    model = model.strip()
    if not model:
        raise UiError(f"{what}: expected a preset name (e.g. llama-3.1-8b) or an uploaded file")
    return model


def estimate_argv(model: str, fields: Mapping) -> list[str]:
    return ["estimate", *_flags(fields, ESTIMATE_FLAGS), "--json", "--", _model(model)]


def train_argv(model: str, fields: Mapping) -> list[str]:
    """One method (`method`), or several side by side (`compare`, e.g. full,lora,qlora); neither: all three."""
    fields = dict(fields)
    if not fields.get("method", "").strip() and not fields.get("compare", "").strip():
        fields["compare"] = "full,lora,qlora"
    return ["train", *_flags(fields, TRAIN_FLAGS), "--json", "--", _model(model)]


def plan_fields() -> dict[str, str]:
    """Quick-plan field -> the tasks that read it, space-separated (the plan form shows a field for those only)."""
    from sizeup.api.planning import QUICK_TASK_OPTIONS

    names = dict.fromkeys(n for reads in QUICK_TASK_OPTIONS.values() for n in reads)
    return {n: " ".join(t for t, reads in QUICK_TASK_OPTIONS.items() if n in reads) for n in names}


def check_plan_fields(fields: Mapping) -> str:
    """The quick plan's task; a field the task does not read, sent with a value, is a one-line 400 naming it
    (never ignored: `users` on a batch job, `engine` on a fine-tune)."""
    from sizeup.api.planning import QUICK_TASK_OPTIONS

    task = str(fields.get("task", "")).strip() or "chat"
    if task not in QUICK_TASK_OPTIONS:
        raise UiError(f"task {task[:40]!r}: expected one of {', '.join(QUICK_TASK_OPTIONS)}")
    for name, tasks in plan_fields().items():
        if str(fields.get(name, "")).strip() and name not in QUICK_TASK_OPTIONS[task]:
            raise UiError(f"field {name!r} does not apply to task {task!r}: it is read by task "
                          f"{', '.join(tasks.split())}; leave it out")
    return task


def plan_quick_argv(model: str, fields: Mapping) -> list[str]:
    check_plan_fields(fields)
    devices = [d.strip() for d in str(fields.get("devices", "")).split(",") if d.strip()]
    return ["plan", *_flags(fields, _PLAN), *(f"--device={d}" for d in devices), "--json", "--", _model(model)]


def plan_file_argv(path: str) -> list[str]:
    """A scenario the UI stored in its uploads folder."""
    return ["plan", "--json", "--", path]


def fit_argv(device: str, fields: Mapping) -> list[str]:
    return ["fit", *_flags(fields, _FIT), "--json", "--", _model(device, "device")]


def flops_argv(target: str, fields: Mapping) -> list[str]:
    """`sizeup flops TARGET`: a zoo model with its input shapes, or an uploaded ONNX graph with its dims."""
    inputs = [s.strip() for s in str(fields.get("input", "")).split(";") if s.strip()]
    dims = [s.strip() for s in str(fields.get("dims", "")).split(",") if s.strip()]
    return ["flops", *(f"--input-spec={s}" if ":" in s else f"--input={s}" for s in inputs),
            *(f"--dim={d}" for d in dims), "--json", "--", _model(target, "model")]


def number_arg(fields: Mapping, name: str, default: float, *, minimum: float = 1, integer: bool = True):
    """A number field for the views that call `sizeup.api` directly: one-line refusal when bad."""
    text = str(fields.get(name, "")).strip()
    if not text:
        return default
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise UiError(f"{name} {text!r}: expected {'an integer' if integer else 'a number'}") from None
    if value < minimum or value != value or value > 1e12:
        raise UiError(f"{name} {text!r}: expected a number of at least {minimum:g}")
    return value


def changes_of(change: str, allowed: Iterable[str]) -> dict[str, str] | None:
    """'--gpus 2 --zero 3' (a would-fit change as the CLI prints it) -> {"gpus": "2", "zero": "3"}; None when it
    sets a flag the page has no field for (it is then shown, not offered as a click)."""
    words, out, allowed = change.split(), {}, set(allowed)
    while words:
        flag = words.pop(0)
        if not flag.startswith("--"):
            return None
        name = flag[2:].replace("-", "_")
        if name not in allowed:
            return None
        out[name] = words.pop(0).replace(",", "") if words and not words[0].startswith("--") else "1"
    return out or None


def with_change(path: str, params: Mapping, change: Mapping) -> str:
    """The page's URL with `params` and `change` applied on top (empty values dropped)."""
    merged = {k: v for k, v in {**params, **{k: str(v) for k, v in change.items()}}.items()
              if str(v).strip() and k != "file"}
    return f"{path}?{urlencode(merged)}"


MAX_WHOLE_BYTES = 2**50
"""Largest whole-file size a header upload may claim (1 PiB: far past any model file)."""


def head_of(filename: str, suffix: str, sent: int, whole: str) -> int | None:
    """The size of the file an upload is the head of, from the form's `file_bytes`; None for a whole file.
    Only a .gguf file is read from its head (a .safetensors header needs its config.json, a config is whole);
    the head must be all the page sends (MAX_UPLOAD_BYTES) of a file larger than that."""
    whole = whole.strip()
    if not whole:
        return None
    shown = f"upload {filename[:80]!r}"
    if not (whole.isascii() and whole.isdigit()) or len(whole) > 16 or not 0 < int(whole) <= MAX_WHOLE_BYTES:
        raise UiError(f"{shown}: file_bytes {whole[:40]!r}: expected the whole file's size in bytes")
    if int(whole) == sent:
        return None  # the whole file was sent
    if suffix != ".gguf":
        raise UiError(f"{shown}: only a .gguf file is read from its first bytes; send a {suffix or 'file'} whole")
    if not (sent == MAX_UPLOAD_BYTES < int(whole)):
        raise UiError(f"{shown}: {sent:,} bytes sent of a {int(whole):,}-byte file: expected the first "
                      f"{MAX_UPLOAD_BYTES:,} bytes of a larger file, or the whole file")
    return int(whole)
