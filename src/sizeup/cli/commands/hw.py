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
    from sizeup import api
    from sizeup.cli.main import emit_json

    if args.verb == "list":
        result, render = api.hw_list(args.kind, variants=args.variants, catalog=args.catalog), render_list
    elif args.verb == "show":
        result, render = api.hw(args.name, catalog=args.catalog), render_info
    elif args.verb == "offers":
        result, render = api.offers(args.gpu, provider=args.provider, catalog=args.catalog), render_offers
    else:
        result = api.local(catalog=args.catalog)
        render = type(result).render
    emit_json(result.to_dict()) if args.json else print(render(result))
    return 0


def render_list(result) -> str:
    from sizeup.report.terminal import render_table
    from sizeup.units import GIGA, format_bytes

    rows = [[d.id, d.kind, format_bytes(d.memory_bytes), f"{d.memory_bandwidth_bytes_per_s / GIGA:,.0f}",
             _peak(d, "bf16") or _peak(d, "fp16"), _peak(d, "fp8"), _peak(d, "int8"),
             f"{d.tdp_w:.0f}" if d.tdp_w else "", d.retrieved] for d in result.devices]
    return (render_table(["device", "kind", "memory", "GB/s", "bf16 TF", "fp8 TF", "int8 TOPS", "W", "read"], rows,
                         right=[False, False, True, True, True, True, True, True, False])
            + f"\n\n{len(rows)} devices; dense tensor peaks (no sparsity); * = derived from the architecture table "
              "(compute units x clock x per-unit rate); blank = not supported, not published, not derivable"
            + (f"\n{result.variants_hidden} memory-size and power-mode variants not listed (--variants lists them)"
               if result.variants_hidden else ""))


def render_offers(result) -> str:
    from sizeup.report.terminal import render_table

    rows = [[o.id, f"{o.gpu_count}x {o.gpu}", o.region, f"{o.on_demand_usd_per_hour:.2f}",
             "" if o.spot_usd_per_hour is None else f"{o.spot_usd_per_hour:.2f}",
             f"{o.on_demand_usd_per_hour / o.gpu_count:.2f}", o.currency, o.price_date] for o in result.offers]
    return (render_table(["offer", "gpus", "region", "$/h", "spot $/h", "$/GPU-h", "listed in", "price date"], rows,
                         right=[False, False, False, True, True, True, False, False])
            + "\n\nprices go stale: each is as of its price date; non-USD prices converted with data/offers/fx.yaml")


def render_info(result) -> str:
    return "\n".join([render_device(result.device, result.usable, result.offers), *_extra_lines(result.extras)])


def _peak(device, precision: str) -> str:
    from sizeup.units import TERA

    value = device.peak_flops_per_s.get(precision)
    return "" if value is None else f"{value / TERA:,.1f}" + ("*" if f"tensor.{precision}" in device.derived_peaks else "")


def render_device(device, usable, offers) -> str:
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
    if offers:
        lines.append(f"offers: {', '.join(offers)}")
    return "\n".join(lines)


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
