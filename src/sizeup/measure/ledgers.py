"""The op ledger of what a stored run timed, rebuilt from its target and config: a traced torch model or an
ONNX graph at a point's batch, a preset LLM's prefill or decode step, a served LLM's decode step at its
concurrency. Calibration fits to these ledgers; nothing here runs a model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sizeup.errors import MeasureError

if TYPE_CHECKING:
    from sizeup.ledger import Ledger

__all__ = ["run_ledger", "llm_ledger", "serving_ledgers"]


def run_ledger(target: str, config: dict, batch: int, train: bool = False) -> Ledger:
    """The ledger of one point of a torch or ONNX sweep: the torch trace with the inputs' leading dimension
    set to the batch (a training step with `train`), or the ONNX graph with its batch dimension bound."""
    if config.get("onnx"):
        from pathlib import Path

        from sizeup.ingest.onnx_graph import onnx_ledger

        dims = dict(config.get("dims") or {})
        if config.get("batch_dim"):
            dims[config["batch_dim"]] = batch
        return onnx_ledger(target, dims=dims, name=Path(target).stem)
    from sizeup.ingest.target import load_factory
    from sizeup.ingest.torch_trace import InputSpec, TraceMode, trace_module

    specs = [InputSpec(shape=(batch, *i["shape"][1:]), dtype=i["dtype"], name=i["name"]) for i in config["inputs"]]
    return trace_module(load_factory(target), specs, dtype=config.get("dtype", "fp32"),
                        mode=TraceMode.TRAIN if train else TraceMode.INFERENCE,
                        optimizer=config.get("optimizer", "adamw"), name=target.rpartition(":")[2])


def llm_ledger(arch, phase: str, batch: int, prompt: int, context: int, dtype: str = "fp32") -> Ledger:
    """A preset LLM's prefill of `prompt` tokens (its last token's logits) or one decode step at `context`
    cached tokens, as sizeup's decoder (measure/llm.py) runs them."""
    from sizeup.ingest.transformer_ops import Step, transformer_ledger

    if phase == "prefill":
        step = Step(batch=batch, new_tokens=prompt, context=prompt, logits="last")
    elif phase == "decode":
        step = Step(batch=batch, new_tokens=1, context=context)
    else:
        raise MeasureError(f"LLM phase {phase!r}: expected prefill or decode")
    return transformer_ledger(arch, step, weights=dtype, act_dtype=dtype, per_layer=False)


def serving_ledgers(arch, concurrency: int, prompt: int, output: int, quant: str) -> dict[str, Ledger]:
    """What a served LLM runs per request at a load test's concurrency: one decode step of `concurrency`
    sequences at the mean context (prompt + half the output), and the prefill of one prompt."""
    from sizeup.ingest.transformer_ops import Step, transformer_ledger

    act = "bf16" if quant not in ("fp32", "fp16") else quant
    decode = Step(batch=concurrency, new_tokens=1, context=prompt + max(output // 2, 1))
    prefill = Step(batch=1, new_tokens=prompt, context=prompt, logits="last")
    return {"decode": transformer_ledger(arch, decode, weights=quant, act_dtype=act, per_layer=False),
            "prefill": transformer_ledger(arch, prefill, weights=quant, act_dtype=act, per_layer=False)}
