"""`compare`: one model on many devices, as `sizeup estimate MODEL --devices CLASS|A,B,C`: per device the most
precise format of its engine that fits, its decode tokens/s and the price per million tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sizeup.api.inference import ServingOptions
from sizeup.api.options import option
from sizeup.errors import ConfigError

__all__ = ["CompareOptions", "DeviceComparison", "compare", "compare_devices", "select_devices"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareOptions(ServingOptions):
    devices: str | tuple[str, ...] = option("common", "a class (consumer, workstation, apple, datacenter, "
                                                      "accelerator, edge, cpu), "
                                                      "'all', 'common' (a few cards most asked about), or device "
                                                      "names (a list, or one string 'a,b,c')")
    engine: str | None = option(None, "serving engine for every device (default: llama.cpp on consumer cards, Macs, "
                                      "edge and CPUs; vllm on workstation and data-centre GPUs and NPUs)")
    formats: tuple[str, ...] | None = option(None, "formats to try, most precise first (default: the engine's "
                                                   "ladder, e.g. llama.cpp q8_0 .. q2_k, vLLM bf16, fp8, awq-int4)")
    catalog: tuple[str | Path, ...] = option((), "extra folders of device/offer YAML files")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceComparison:
    """One row per device (`sizeup.workload.device_fit.DeviceFit`), those that fit first, fastest first."""

    model: str
    devices: str
    """The class, or the names, as asked."""
    options: CompareOptions
    rows: tuple[Any, ...]

    @property
    def fits(self) -> bool:
        """Whether any device runs the model."""
        return any(r.fits for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        o = self.options
        return {"model": self.model, "devices_class": self.devices, "gpus": o.gpus, "batch": o.batch,
                "prompt": o.prompt, "output": o.output, "context": o.context,
                "devices": [r.to_dict() for r in self.rows]}


def compare(model: str, options: CompareOptions | None = None, /, **changes: Any) -> DeviceComparison:
    """`model` on every device of `devices`; the keywords are `CompareOptions`' fields."""
    from sizeup.api.options import build_options

    o = build_options(CompareOptions, options, changes, "compare")
    rows = compare_devices(model, devices=o.devices, engine=o.engine, gpus=o.gpus, kv_dtype=o.kv_dtype,
                           batch=o.batch, prompt=o.prompt, output=o.output, context=o.context, formats=o.formats,
                           catalog=o.catalog)
    rows.sort(key=lambda r: (not r.fits, -(r.tokens_per_s or 0.0)))
    asked = o.devices if isinstance(o.devices, str) else ",".join(o.devices)
    return DeviceComparison(model=model, devices=asked, options=o, rows=tuple(rows))


def select_devices(catalog, devices: str | Sequence[str]) -> list:
    """The catalog devices of a class, 'all', 'common', a list of names, or names in one string 'a,b,c'."""
    from sizeup.hardware.segments import COMMON_DEVICES, SEGMENTS, segment_of

    if isinstance(devices, str):
        if devices == "common":
            return [catalog.devices[d] for d in COMMON_DEVICES if d in catalog.devices]
        if devices == "all":  # a class lists base devices; memory-size and power-mode variants are asked by name
            return [d for d in catalog.devices.values() if not d.variant_of]
        if devices in SEGMENTS:
            return [d for d in catalog.devices.values() if segment_of(d) == devices and not d.variant_of]
        names = [n.strip() for n in devices.split(",") if n.strip()]
        if not names:
            raise ConfigError(f"--devices {devices!r}: expected one of {', '.join(SEGMENTS)}, all, common, or device "
                              "names separated by commas")
        devices = names
    picked = []
    for name in devices:
        device = catalog.device(name)
        if device.id not in {d.id for d in picked}:
            picked.append(device)
    return picked


def compare_devices(
    model: str,
    *,
    devices: str | Sequence[str] = "common",
    engine: str | None = None,
    gpus: int = 1,
    kv_dtype: str | None = "fp16",
    batch: int = 1,
    prompt: int = 512,
    output: int = 128,
    context: int | None = None,
    formats: Sequence[str] | None = None,
    catalog: Sequence[str] = (),
) -> list:
    """One row per device (`sizeup.workload.device_fit.DeviceFit`), in the order asked: the most precise format
    of the device's engine that fits `batch` sequences of the context, its decode tokens/s, and the price per
    million tokens on the cheapest on-demand offer; `formats` replaces the engine's ladder (a .gguf file: the
    format it stores). `compare` is the same, sorted, as a typed result."""
    from sizeup.api.inference import check_context, tokens_text, weights_format
    from sizeup.hardware.catalog import load_catalog
    from sizeup.ingest.hf_config import load_model
    from sizeup.workload.device_fit import device_fit
    from sizeup.workload.inference import InferenceConfig, estimate_inference, execution_for

    cat = load_catalog(catalog)
    kv_dtype = kv_dtype or "fp16"
    targets = select_devices(cat, devices)
    arch = load_model(model)
    check_context(arch, prompt=prompt, total=context if context is not None else prompt + output,
                  what=tokens_text(prompt, output, context))
    if formats is None and arch.stored_format_from:  # a GGUF file: the format it stores, not an engine's ladder
        formats = [weights_format(arch, None, model)[0]]
    elif formats is not None and engine is not None:  # the engine's own spellings (mlx: '4bit' -> mlx-q4)
        from sizeup.engines.format_names import engine_format_name

        formats = [engine_format_name(engine, f)[0] for f in formats]

    resolved: dict[tuple[str, str], object] = {}

    def estimate_at(device, eng: str, fmt: str):
        cfg = InferenceConfig(batch=batch, prompt=prompt, output=output, context=context, weights=fmt,
                              kv_dtype=kv_dtype, engine=eng, gpus=gpus)
        key = (device.id, eng)
        if key not in resolved:  # each device's engine resolved once, for all the formats tried on it
            resolved[key] = execution_for(device, cfg).for_static_batch()  # a table of batches with no load
        return estimate_inference(arch, device, cfg, execution=resolved[key])

    return [device_fit(arch, d, cat, engine=engine, estimate_at=estimate_at, formats=formats) for d in targets]
