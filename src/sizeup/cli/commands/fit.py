"""`sizeup fit DEVICE`: which models run on a device, under which engine and format, and how fast, fastest first."""

from __future__ import annotations

import argparse

from sizeup.cli.commands.hw import add_catalog_argument
from sizeup.cli.flags import BATCH, TOKENS, TOKENS_OR_ZERO


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fit", help="which models run on a device, at which format and speed, fastest first",
                       description="DEVICE is a catalog name (see 'sizeup hw list'): '4060 ti 16gb', 'm3 max', 'h100'. "
                                   "Each model is priced under every engine that loads it on the device (llama.cpp GGUF, "
                                   "vLLM bf16 / fp8 / AWQ / GPTQ), at the most precise format that fits.")
    p.add_argument("device")
    p.add_argument("--task", choices=["chat", "code", "finetune"], default="chat",
                   help="chat: 800 prompt + 250 output tokens; code: 8,192 + 512; finetune: one training step "
                        "(full, LoRA or QLoRA, micro-batch 1)")
    p.add_argument("--models", metavar="M,M,…", help="only these models (presets, Hugging Face ids, config.json)")
    p.add_argument("--engine", choices=["llama.cpp", "vllm"], help="only this engine (default both, where they run)")
    p.add_argument("--quant", metavar="F,F,…", help="only these formats, most precise first, e.g. q4_k_m or "
                                                    "bf16,awq-int4")
    p.add_argument("--batch", type=BATCH, default=1, help="concurrent sequences (default 1)")
    p.add_argument("--prompt", type=TOKENS, help="prompt tokens (default by task)")
    p.add_argument("--output", type=TOKENS_OR_ZERO, help="output tokens (default by task)")
    p.add_argument("--seq", type=TOKENS, default=2048, help="finetune: sequence length (default 2048)")
    p.add_argument("--limit", type=BATCH, help="show only the N fastest rows (the JSON has them all)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_catalog_argument(p)
    p.set_defaults(func=run)


def _list(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(t.strip() for t in text.split(",") if t.strip())


def run(args: argparse.Namespace) -> int:
    from sizeup.api import fit
    from sizeup.cli.main import emit_json

    result = fit(args.device, task=args.task, models=_list(args.models), engine=args.engine, formats=_list(args.quant),
                 batch=args.batch, prompt=args.prompt, output=args.output, seq=args.seq, catalog=tuple(args.catalog))
    emit_json(result.to_dict()) if args.json else print(render_fit(result, args.limit))
    return 0 if result.rows else 2


def render_fit(r, limit: int | None = None) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import format_bytes, format_seconds

    finetune = r.task == "finetune"
    rows = r.rows[:limit] if limit else r.rows
    table = [[x.model, f"{x.params / 1e9:,.1f}B", x.engine, x.method or x.format if finetune else x.format,
              "unknown" if x.tokens_per_s is None else f"{x.tokens_per_s:,.1f}",
              "" if finetune or x.ttft_s is None else format_seconds(x.ttft_s),
              format_bytes(x.memory_bytes), "" if x.max_context is None else f"{x.max_context:,}"] for x in rows]
    head = ["model", "params", "engine", "method" if finetune else "format",
            "train tokens/s" if finetune else "tokens/s", "" if finetune else "TTFT", "memory",
            "" if finetune else "max context"]
    lines = [render_table(head, table, title=f"{r.task} on {r.device.name}: {len(r.rows)} model/engine rows fit"
                          + (f" (the {limit} fastest shown)" if limit and limit < len(r.rows) else ""))]
    if r.does_not_fit:
        lines.append(f"\ndo not fit ({len(r.does_not_fit)}): " + ", ".join(m.model for m in r.does_not_fit))
    lines.extend(f"assumption: {a}" for a in r.assumptions)
    return "\n".join(lines)
