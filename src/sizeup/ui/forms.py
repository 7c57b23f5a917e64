"""Request fields -> CLI argv (`--flag=value`, so a value such as '-2' reaches the CLI's own check).

Only the flags listed here are ever built; options that read files (--catalog, --db, --calibration,
--out, --plots) are never taken from a request.
"""

from __future__ import annotations

from sizeup.ui.bridge import UiError

__all__ = ["DEFAULTS", "estimate_argv", "number_arg", "plan_quick_argv", "train_argv"]

DEFAULTS = {"model": "llama-3.1-8b", "device": "rtx-4090", "quant": "q4_k_m", "engine": "llama.cpp",
            "kv_dtype": "fp16", "batch": "1", "prompt": "512", "output": "128"}
"""The first screen: llama-3.1-8b on an RTX 4090 in Q4_K_M, so it opens with numbers."""

_ESTIMATE = ("device", "quant", "kv_dtype", "engine", "batch", "prompt", "output", "context", "gpus", "gpu_layers")
_TRAIN = ("device", "method", "rank", "optimizer", "precision", "recompute", "gpus", "seq", "micro_batch",
          "global_batch", "tokens", "epochs", "zero", "tp", "pp")
_PLAN = ("task", "users", "rps", "prompt", "output", "ttft_p95", "tpot_p95", "engine")


def _flags(fields: dict, names) -> list[str]:
    out = []
    for name in names:
        value = str(fields.get(name, "")).strip()
        if value:
            out.append(f"--{name.replace('_', '-')}={value}")
    return out


def estimate_argv(model: str, fields: dict) -> list[str]:
    return ["estimate", model, *_flags(fields, _ESTIMATE), "--json"]


def train_argv(model: str, fields: dict) -> list[str]:
    methods = fields.get("compare") or "full,lora,qlora"
    if "method" in fields and fields.get("method") and not fields.get("compare"):
        return ["train", model, *_flags(fields, _TRAIN), "--json"]
    return ["train", model, *_flags(fields, _TRAIN), f"--compare={methods}", "--json"]


def plan_quick_argv(model: str, fields: dict) -> list[str]:
    devices = [d.strip() for d in str(fields.get("devices", "")).split(",") if d.strip()]
    return ["plan", model, *_flags(fields, _PLAN), *(f"--device={d}" for d in devices)]


def number_arg(fields: dict, name: str, default: float, *, minimum: float = 1, integer: bool = True):
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
