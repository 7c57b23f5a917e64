"""Compare devices: one model across the catalog, filtered as the page asks, each row from
`sizeup.api.compare_devices` (the same rows as `sizeup estimate MODEL --devices all --json`; no formulas here).

A row carries the device's vendor, kind and memory for the filters and the table, the most precise format
that fits (or the one asked for), decode tokens/s, and dollars per million output tokens on the cheapest
on-demand offer per GPU at full load (the device producing tokens all the hour, stated in `cost_basis`).
"""

from __future__ import annotations

__all__ = ["compare_devices"]

KINDS = ("gpu", "npu", "tpu", "soc", "cpu")


def compare_devices(model: str, *, quant: str | None = None, engine: str | None = None, batch: int = 1,
                    prompt: int = 512, output: int = 128, vendor: str = "", min_memory_gib: float = 0.0,
                    max_usd_per_hour: float | None = None, kind: str = "") -> dict:
    from sizeup.api import compare_devices as fits_by_device
    from sizeup.hardware.catalog import load_catalog
    from sizeup.workload.device_fit import cheapest_offer

    cat = load_catalog()
    chosen = []
    for dev in sorted(cat.devices.values(), key=lambda d: d.id):
        if dev.variant_of:  # memory-size and power-mode variants: asked for by name, not listed
            continue
        if vendor and dev.vendor.lower() != vendor.lower():
            continue
        if kind and dev.kind != kind:
            continue
        if dev.memory_bytes < min_memory_gib * 2**30:
            continue
        if max_usd_per_hour is not None:
            _, per_gpu_hour = cheapest_offer(cat, dev)
            if per_gpu_hour is None or per_gpu_hour > max_usd_per_hour:
                continue
        chosen.append(dev.id)
    rows = []
    if chosen:
        for fit in fits_by_device(model, devices=chosen, engine=engine or None, batch=batch, prompt=prompt,
                                  output=output, formats=[quant] if quant else None):
            row = fit.to_dict()
            rows.append(row | {"vendor": fit.device.vendor, "kind": fit.device.kind,
                               "device_memory_bytes": fit.device.memory_bytes,
                               "tokens_per_s": row["decode_tokens_per_s"], "error": row["reason"] or None})
    return {"model": model, "quant": quant or "most precise that fits", "engine": engine or "by device class",
            "batch": batch, "prompt_tokens": prompt, "output_tokens": output, "utilisation": 1.0,
            "cost_basis": "cheapest on-demand offer per GPU, decode tokens/s at full load", "devices": rows}
