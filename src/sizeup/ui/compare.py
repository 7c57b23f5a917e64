"""Compare devices: one model on every catalog device, through `sizeup.api.estimate` (no formulas here).

Each row is the estimate's own JSON (fits, decode tokens/s) plus the cheapest on-demand cloud offer for
the device, priced per GPU, and the planner's `cost_per_million_tokens` at full load (utilisation 1.0,
stated in the row). A device the model cannot be estimated on is listed with the estimator's message.
"""

from __future__ import annotations

__all__ = ["compare_devices"]

KINDS = ("gpu", "npu", "tpu", "soc", "cpu")


def compare_devices(model: str, *, quant: str = "bf16", engine: str = "hf", batch: int = 1, prompt: int = 512,
                    output: int = 128, vendor: str = "", min_memory_gib: float = 0.0,
                    max_usd_per_hour: float | None = None, kind: str = "") -> dict:
    from sizeup.api import estimate
    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.plan.cost import HOURS_PER_MONTH, cost_per_million_tokens

    cat = load_catalog()
    rows = []
    for dev in sorted(cat.devices.values(), key=lambda d: d.id):
        if vendor and dev.vendor.lower() != vendor.lower():
            continue
        if kind and dev.kind != kind:
            continue
        if dev.memory_bytes < min_memory_gib * 2**30:
            continue
        offers = [o for o in cat.offers_for(dev.id) if o.gpu_count]
        best = min(offers, key=lambda o: o.on_demand_usd_per_hour / o.gpu_count, default=None)
        per_gpu_hour = best.on_demand_usd_per_hour / best.gpu_count if best else None
        if max_usd_per_hour is not None and (per_gpu_hour is None or per_gpu_hour > max_usd_per_hour):
            continue
        row = {"device": dev.id, "name": dev.name, "vendor": dev.vendor, "kind": dev.kind,
               "memory_bytes": dev.memory_bytes, "offer": best.id if best else None,
               "usd_per_gpu_hour": per_gpu_hour}
        try:
            est = estimate(model, device=dev, quant=quant, engine=engine, batch=batch, prompt=prompt,
                           output=output).to_dict()
        except SizeupError as e:
            rows.append(row | {"fits": False, "error": str(e), "tokens_per_s": None, "usd_per_million_tokens": None})
            continue
        speed = est["decode"]["tokens_per_s"] if est["fits"] and est.get("decode") else None
        tps = speed["typical"] if speed else None
        usd = cost_per_million_tokens(per_gpu_hour * HOURS_PER_MONTH, tps, 1.0) if tps and per_gpu_hour else None
        rows.append(row | {"fits": est["fits"], "error": None, "tokens_per_s": tps,
                           "tokens_per_s_range": speed,
                           "total_memory_bytes": est["memory"]["total_bytes"],
                           "usable_bytes": est["memory"]["usable_bytes"], "usd_per_million_tokens": usd})
    return {"model": model, "quant": quant, "engine": engine, "batch": batch, "prompt_tokens": prompt,
            "output_tokens": output, "utilisation": 1.0,
            "cost_basis": "cheapest on-demand offer per GPU, decode tokens/s at full load", "devices": rows}
