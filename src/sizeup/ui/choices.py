"""What the forms offer, from sizeup's own data (runs in a UI worker, which holds the catalog):

- presets (`sizeup.api.models`: id, family, parameters, context), catalog devices (the product, not its memory or
  power variants, which are asked for by name), frameworks (data/training/frameworks.yaml);
- per device, the serving engines that run on it and the weight formats each loads there: llama.cpp and vLLM from
  data/efficiency/engine_formats.yaml (with its sources); the others from the formats a device table tries
  (`workload.device_fit.formats_to_try`: the engine's FORMATS, fp8 only where the engine can run it on the device).

A format asked for that is not in the engine's list (a GGUF file's own type, a link) is kept at the top of the
list, so the form never shows another format than the one priced.
"""

from __future__ import annotations

from typing import Any

__all__ = ["KV_DTYPES", "SERVING_ENGINES", "engine_choices", "menus", "ZOO_INPUTS"]

SERVING_ENGINES = ("llama.cpp", "vllm", "hf", "tensorrt-llm")
"""The engines an estimate of a transformer takes (`--engine`; plain `tensorrt` is for ONNX graphs)."""
KV_DTYPES = ("fp16", "bf16", "fp8", "q8_0", "q4_0")
"""`--kv-dtype`'s documented values."""

ZOO_INPUTS = {"c2f": "1x64x64x64", "c2f_depthwise": "1x64x64x64", "resnet50": "1x3x224x224",
              "mlp_conv_net": "1x3x32x32", "llama_block": "1x128x512", "gpt2_small": "int64:1x128",
              "warp_block": "1x32x32x32"}
"""sizeup's zoo models (sizeup.examples.zoo) the FLOPs page offers, each with the input the README, tests or
benchmarks trace it at (shown in the form, editable)."""


def menus() -> dict[str, Any]:
    """The lists every page's forms share (read once per UI)."""
    from sizeup.api import models
    from sizeup.hardware.catalog import load_catalog
    from sizeup.workload.frameworks import framework_ids

    devices = [{"id": d.id, "name": d.name, "kind": d.kind, "vendor": d.vendor, "memory_bytes": d.memory_bytes}
               for d in sorted(load_catalog().devices.values(), key=lambda d: (d.kind, d.vendor, d.name))
               if not d.variant_of]
    presets = [{"id": m.id, "family": m.family, "params": m.params, "context": m.context, "kind": m.kind}
               for m in models().models]
    return {"presets": presets, "devices": devices, "vendors": sorted({d["vendor"] for d in devices}),
            "frameworks": list(framework_ids()), "kv_dtypes": list(KV_DTYPES), "zoo": dict(ZOO_INPUTS),
            "engines": list(SERVING_ENGINES),
            "formats": list(dict.fromkeys(f for e in SERVING_ENGINES for f in _ladder(e, None)))}


def engine_choices(device_name: str, engine: str | None, quant: str | None) -> dict[str, Any]:
    """{"engines": [...], "formats": [...], "device": id}: the engines that run on the device and the formats
    `engine` loads there. An unknown device gives every engine and format (the estimate names the bad device)."""
    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.workload.engine_formats import engine_formats

    table = engine_formats()
    try:
        device = load_catalog().device(device_name)
    except SizeupError:
        device = None
    engines = [e for e in SERVING_ENGINES if device is None or e not in table or table[e].runs(device)]
    if engine and engine not in engines:
        engines.insert(0, engine)
    formats: list[str] = []
    if engine in table and device is not None:
        formats = list(table[engine].formats_for(device))
        # the rest of the engine's ladder, below what engine_formats lists (its fp8 is the table's to say)
        formats += [f for f in _ladder(engine, device) if f not in formats and f != "fp8"]
    else:
        formats = list(_ladder(engine or "hf", device))
    if quant and quant not in formats:
        formats.insert(0, quant)
    return {"device": device.id if device is not None else device_name, "engines": engines, "formats": formats}


def _ladder(engine: str, device) -> tuple[str, ...]:
    """The formats a device table tries for `engine` on `device` (every one of the engine's when None); none for
    an engine sizeup does not know (the estimate names it)."""
    from sizeup.errors import SizeupError
    from sizeup.workload.device_fit import engine_formats, formats_to_try

    try:
        return formats_to_try(engine, device) if device is not None else engine_formats(engine)
    except SizeupError:
        return ()
