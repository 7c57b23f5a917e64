"""`sizeup hw list|show|offers|local`: the hardware catalog."""

from __future__ import annotations

import argparse


def add_catalog_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", action="append", default=[], metavar="DIR",
                   help="extra folder of device/offer YAML files (repeatable; overrides the built-in ones)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hw", help="the hardware catalog: devices, cloud offers, this machine")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    ls = verbs.add_parser("list", help="list the devices")
    ls.add_argument("--kind", choices=["gpu", "tpu", "npu", "soc", "cpu"], help="only this kind")
    ls.add_argument("--variants", action="store_true",
                    help="also list the memory-size and power-mode variants (hw show DEVICE names them)")
    show = verbs.add_parser("show", help="one device in full")
    show.add_argument("name", help="device id, name or alias (e.g. 4090, 'H100 SXM', a100-80g)")
    offers = verbs.add_parser("offers", help="cloud offers and their dated prices")
    offers.add_argument("--device", "--gpu", dest="gpu", metavar="NAME",
                        help="only offers with this device (--gpu is the same flag)")
    offers.add_argument("--provider", help="only this provider (aws, gcp, azure, lambda, runpod, autodl, vastai, tencent, ...)")
    local = verbs.add_parser("local", help="this machine's CPU and GPUs, mapped to the catalog")
    for q in (ls, show, offers, local):
        add_catalog_argument(q)
        q.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sizeup.cli.main import emit_json
    from sizeup.report.terminal import render_table
    from sizeup.units import GIGA, format_bytes
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.usable import usable_memory

    catalog = load_catalog(args.catalog)
    if args.verb == "list":
        devices = [d for d in catalog.devices.values() if args.kind is None or d.kind == args.kind]
        hidden = 0 if args.variants else sum(1 for d in devices if d.variant_of)
        devices = [d for d in devices if args.variants or not d.variant_of]
        devices.sort(key=lambda d: (d.kind, d.vendor, -d.memory_bytes, d.id))
        if args.json:
            emit_json({"devices": [device_summary(d, catalog) for d in devices], "variants_hidden": hidden})
            return 0
        rows = [[d.id, d.kind, format_bytes(d.memory_bytes), f"{d.memory_bandwidth_bytes_per_s / GIGA:,.0f}",
                 _peak(d, "bf16") or _peak(d, "fp16"), _peak(d, "fp8"), _peak(d, "int8"),
                 f"{d.tdp_w:.0f}" if d.tdp_w else "", d.retrieved] for d in devices]
        print(render_table(["device", "kind", "memory", "GB/s", "bf16 TF", "fp8 TF", "int8 TOPS", "W", "read"], rows,
                           right=[False, False, True, True, True, True, True, True, False]))
        print(f"\n{len(devices)} devices; dense tensor peaks (no sparsity); * = derived from the architecture "
              f"table (compute units x clock x per-unit rate); blank = not supported, not published, not derivable")
        if hidden:
            print(f"{hidden} memory-size and power-mode variants not listed (--variants lists them)")
        return 0
    if args.verb == "show":
        device = catalog.device(args.name)
        usable = usable_memory(device)
        data = device_summary(device, catalog) | device.to_dict() | {
            "usable_memory_bytes": usable.bytes.typical, "usable_memory": usable.to_dict(),
            "offers": [o.id for o in catalog.offers_for(device.id)],
        } | device_extras(device, catalog)
        if args.json:
            emit_json(data)
            return 0
        print(render_device(device, usable, catalog))
        return 0
    if args.verb == "offers":
        gpu = catalog.device(args.gpu).id if args.gpu else None
        providers = sorted({o.provider for o in catalog.offers.values()})
        if args.provider is not None and args.provider not in providers:
            from sizeup.errors import ConfigError

            raise ConfigError(f"--provider {args.provider!r}: not a provider in the catalog; expected one of "
                              f"{', '.join(providers)}")
        offers = [o for o in catalog.offers_for(gpu) if args.provider is None or o.provider == args.provider]
        offers.sort(key=lambda o: (o.on_demand_usd_per_hour / o.gpu_count, o.id))
        if args.json:
            emit_json({"offers": [o.to_dict() for o in offers]})
            return 0
        rows = [[o.id, f"{o.gpu_count}x {o.gpu}", o.region, f"{o.on_demand_usd_per_hour:.2f}",
                 "" if o.spot_usd_per_hour is None else f"{o.spot_usd_per_hour:.2f}",
                 f"{o.on_demand_usd_per_hour / o.gpu_count:.2f}", o.currency, o.price_date] for o in offers]
        print(render_table(["offer", "gpus", "region", "$/h", "spot $/h", "$/GPU-h", "listed in", "price date"], rows,
                           right=[False, False, False, True, True, True, False, False]))
        print("\nprices go stale: each is as of its price date; non-USD prices converted with data/offers/fx.yaml")
        return 0
    from sizeup.hardware.local import detect_local

    local = detect_local(catalog)
    if args.json:
        emit_json(local.to_dict())
        return 0
    print(local.render())
    return 0


def _peak(device, precision: str) -> str:
    from sizeup.units import TERA

    value = device.peak_flops_per_s.get(precision)
    return "" if value is None else f"{value / TERA:,.1f}" + ("*" if f"tensor.{precision}" in device.derived_peaks else "")


def device_summary(device, catalog) -> dict:
    from sizeup.hardware.usable import usable_memory

    return {
        "id": device.id, "name": device.name, "kind": device.kind, "vendor": device.vendor,
        "memory_bytes": device.memory_bytes, "usable_memory_bytes": usable_memory(device).bytes.typical,
        "memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
        "peak_flops_per_s": dict(device.peak_flops_per_s),
        "interconnect_bytes_per_s": device.interconnect_bytes_per_s, "tdp_w": device.tdp_w,
        "derived_peaks": dict(device.derived_peaks), "compute_known": bool(device.peak_flops_per_s or
                                                                           device.vector_flops_per_s),
        "resolved_as": device.resolved_as,
    }


def render_device(device, usable, catalog) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import GIGA, TERA, format_bytes

    lines = [f"{device.name}  ({device.id}; {device.kind}, {device.vendor})"]
    if device.resolved_as:
        lines.append(f"note: {device.resolved_as}")
    if device.aliases:
        lines.append(f"aliases: {', '.join(device.aliases)}")
    lines.append(f"memory: {format_bytes(device.memory_bytes)} {device.memory_type or ''}, "
                 f"{device.memory_bandwidth_bytes_per_s / GIGA:,.0f} GB/s")
    u = usable.bytes
    lines.append(f"usable by a framework: {format_bytes(u.typical)} (range {format_bytes(u.low)} - "
                 f"{format_bytes(u.high)}; class {usable.class_id}: {usable.basis})")
    rows = []
    for p in ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"):
        tensor, vector = device.peak_flops_per_s.get(p), device.vector_flops_per_s.get(p)
        if tensor or vector:
            ridge = (tensor or vector) / device.memory_bandwidth_bytes_per_s
            mark = {"tensor": "*" if f"tensor.{p}" in device.derived_peaks else "",
                    "vector": "*" if f"vector.{p}" in device.derived_peaks else ""}
            rows.append([p, "" if tensor is None else f"{tensor / TERA:,.1f}{mark['tensor']}",
                         "" if vector is None else f"{vector / TERA:,.1f}{mark['vector']}", f"{ridge:,.0f}"])
    if rows:
        lines.append(render_table(["precision", "tensor T/s", "vector T/s", "ridge FLOP/B"], rows))
    else:
        lines.append("compute: unknown (no peak published, none derivable: the data file needs architecture, "
                     "compute_units and boost_clock_mhz)")
    for key, method in device.derived_peaks.items():
        lines.append(f"* {key}: {method}")
    if device.derived_range:
        lines.append(f"  derived peaks are priced with a wider efficiency range (x{device.derived_range[0]:g} low, "
                     f"x{device.derived_range[1]:g} high)")
    if device.fp16_acc16_flops_per_s:
        lines.append(f"fp16 with fp16 accumulate: {device.fp16_acc16_flops_per_s / TERA:,.1f} TFLOP/s "
                     f"(the table's fp16 is the fp32-accumulate rate PyTorch uses)")
    link = device.interconnect
    if link:
        lines.append(f"interconnect: {link.kind}, {link.bytes_per_s / GIGA:,.0f} GB/s")
    if device.pcie_gen:
        lines.append(f"host link: PCIe gen {device.pcie_gen} x{device.pcie_lanes or 16}")
    extra = [f"TDP {device.tdp_w:.0f} W" if device.tdp_w else "",
             f"L2 {format_bytes(device.l2_bytes)}" if device.l2_bytes else "",
             f"{device.compute_units} {device.compute_unit_name or 'units'}" if device.compute_units else "",
             f"{device.boost_clock_hz / 1e6:,.0f} MHz boost" if device.boost_clock_hz else ""]
    if any(extra):
        lines.append(", ".join(e for e in extra if e))
    for note in device.notes:
        lines.append(f"note: {note}")
    lines.append(f"source: {device.source} (read {device.retrieved})")
    offers = catalog.offers_for(device.id)
    if offers:
        lines.append(f"offers: {', '.join(o.id for o in offers)}")
    lines.extend(_extra_lines(device_extras(device, catalog)))
    return "\n".join(lines)


def device_extras(device, catalog) -> dict:
    """Variants, power-mode clocks, thermal trip points, purchase prices and wall power of `device`."""
    from sizeup.hardware.purchase import purchases_for, wall_power
    from sizeup.hardware.thermal import thermal_profile

    variants = sorted((d for d in catalog.devices.values() if d.variant_of == device.id),
                      key=lambda d: (d.memory_bytes, d.tdp_w or 0, d.id))
    profile = thermal_profile(device, tuple(catalog.folders))
    return {
        "variant_of": device.variant_of, "power_mode": device.power_mode,
        "power_mode_clocks": dict(device.power_mode_clocks),
        "variants": [{"id": d.id, "power_mode": d.power_mode, "memory_bytes": d.memory_bytes} for d in variants],
        "thermal": None if profile is None else profile.to_dict(),
        "purchases": [p.to_dict() | {"wall_power": wall_power(p, catalog).to_dict()}
                      for p in purchases_for(catalog, device)],
    }


def _extra_lines(extras: dict) -> list[str]:
    from sizeup.units import format_bytes

    lines = []
    if extras["variant_of"]:
        lines.append(f"variant of: {extras['variant_of']}")
    clocks = extras["power_mode_clocks"]
    if extras["power_mode"] and clocks:
        parts = [f"GPU max {clocks['gpu_max_hz'] / 1e6:,.0f} MHz" if "gpu_max_hz" in clocks else "",
                 f"{clocks['gpu_units']:g} GPU units" if "gpu_units" in clocks else "",
                 f"{clocks['cpu_online']:g} CPU cores online" if "cpu_online" in clocks else "",
                 f"CPU max {clocks['cpu_max_hz'] / 1e6:,.1f} MHz" if "cpu_max_hz" in clocks else "",
                 f"EMC {clocks['emc_max_hz'] / 1e6:,.0f} MHz" if "emc_max_hz" in clocks else "",
                 f"budget {clocks['budget_w']:g} W" if "budget_w" in clocks else ""]
        lines.append(f"power mode {extras['power_mode']}: {', '.join(p for p in parts if p)}")
    if extras["variants"]:
        names = [f"{v['id']} ({v['power_mode'] or format_bytes(v['memory_bytes'])})" for v in extras["variants"]]
        lines.append(f"variants: {', '.join(names)}")
    thermal = extras["thermal"]
    if thermal:
        trips = [f"{t['name']} {t['temperature_c']:g} C" + ("" if t["clock_fraction"] is None
                                                          else f" (x{t['clock_fraction']:g} clocks)")
                 for t in thermal["trips"]]
        lines.append(f"thermal ({thermal['sensor']}): {', '.join(trips)}; source: {thermal['source']} "
                     f"(read {thermal['retrieved']})")
    for p in extras["purchases"]:
        price = [f"MSRP ${p['msrp_usd']:,.0f} ({p['msrp_date']})" if p["msrp_usd"] is not None else "",
                 f"street ${p['street_usd']:,.0f} ({p['street_date']}, {p['street_where']})"
                 if p["street_usd"] is not None else ""]
        lines.append(f"buy: {p['item']}: {'; '.join(x for x in price if x)}")
        wall = p["wall_power"]
        watts = "unknown" if wall["watts"] is None else f"{wall['watts']:,.0f} W"
        lines.append(f"  wall power {watts}: {wall['basis']}")
        lines.append(f"  source: {p['source']} (read {p['retrieved']})")
    return lines
