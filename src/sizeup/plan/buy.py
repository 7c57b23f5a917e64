"""Buy vs rent: what the planned hardware costs to buy (dated, sourced purchase prices of the catalog,
hardware.purchase), what it draws at the wall and costs in electricity, the cheapest rental that does the
same job, and the months after which buying is cheaper.

- Edge: the device (its catalog item, or `edge.price_usd`) against the cheapest cloud GPU that runs the same
  model, format and engine at the per-token latency the scenario asks (one GPU, on-demand, all month).
- Serving on rented capacity: the fleet's peak GPUs bought as catalog items (cards or servers) against the
  plan's monthly bill.
Energy is the power at the wall (published, or the catalog's derivation from TDP; else the device's TDP,
said so) at full load all month (an upper bound) × the electricity price (`budget.electricity_usd_per_kwh`,
`--electricity`, else 0.15 USD/kWh assumed). Break-even months = price ÷ (rent − energy) a month.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sizeup.plan.cost import HOURS_PER_MONTH

__all__ = ["DEFAULT_ELECTRICITY_USD_PER_KWH", "BuyVsRent", "edge_buy_vs_rent", "fleet_buy_vs_rent",
           "electricity_price"]

DEFAULT_ELECTRICITY_USD_PER_KWH = 0.15
"""Assumed when the scenario gives none (the same default as `constraints.owned[].power_usd_per_kwh`)."""
RENT_SEARCH_LIMIT = 12
"""Edge: the cheapest offers tried, cheapest first, for a rental that meets the latency."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BuyVsRent:
    what: str
    """What is bought ("1 × Jetson Orin Nano Super Developer Kit (8GB)")."""
    price_usd: float | None
    price_note: str
    power_w: float | None
    power_note: str
    electricity_usd_per_kwh: float
    electricity_note: str
    energy_usd_per_month: float | None
    rent: str | None
    """The rental it is compared with, or None when no offer does the same job."""
    rent_usd_per_month: float | None
    rent_note: str = ""
    break_even_months: float | None = None
    """None: unknown price, no rental, or the energy alone costs more than renting."""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("what", "price_usd", "price_note", "power_w", "power_note",
                                              "electricity_usd_per_kwh", "electricity_note", "energy_usd_per_month",
                                              "rent", "rent_usd_per_month", "rent_note", "break_even_months")}

    @property
    def text(self) -> str:
        if self.break_even_months is not None:
            return (f"buying pays for itself after {self.break_even_months:,.1f} months against renting "
                    f"{self.rent} at ${self.rent_usd_per_month:,.0f}/month"
                    + (" (electricity not counted: the power is not in the catalog)"
                       if self.energy_usd_per_month is None else ""))
        if self.price_usd is None:
            return "purchase price unknown: no break-even"
        if self.rent_usd_per_month is None:
            return "no rental does the same job: no break-even"
        return "the electricity alone costs more than renting: buying never breaks even"


def electricity_price(scenario) -> tuple[float, str]:
    value = getattr(scenario.budget, "electricity_usd_per_kwh", None)
    if value is not None:
        return value, "from the scenario (budget.electricity_usd_per_kwh or --electricity)"
    return DEFAULT_ELECTRICITY_USD_PER_KWH, ("assumed (0.15 USD/kWh): set budget.electricity_usd_per_kwh or "
                                             "--electricity for your tariff")


def _items(catalog, device):
    """The catalog's purchasable items holding `device` (dated, sourced prices)."""
    from sizeup.hardware.purchase import purchases_for

    return purchases_for(catalog, device)


def _power(catalog, item, device, units: int) -> tuple[float | None, str]:
    """Watts at the wall of `units` items, or the devices' TDP when the wall figure is unknown."""
    if item is not None:
        from sizeup.hardware.purchase import wall_power

        wall = wall_power(item, catalog)
        if wall.watts is not None:
            return wall.watts * units, f"at the wall: {wall.basis}"
    count = units * (item.count if item is not None else 1)
    if device.tdp_w:
        return device.tdp_w * count, (f"{count} × {device.tdp_w:g} W TDP (the wall figure is not published: the host, "
                                      "board and adapter are not counted)")
    return None, "not in the catalog"


def _price_note(item) -> str:
    if item.street_usd is not None:
        return f"street price of {item.street_date} ({item.street_where}); {item.source}"
    return f"launch MSRP of {item.msrp_date}; {item.source}"


def _energy(power_w: float | None, kwh: float) -> float | None:
    return None if power_w is None else power_w / 1000 * HOURS_PER_MONTH * kwh


def _break_even(price: float | None, rent: float | None, energy: float | None) -> float | None:
    if price is None or rent is None:
        return None
    saved = rent - (energy or 0.0)
    return price / saved if saved > 0 else None


def edge_buy_vs_rent(result, catalog) -> BuyVsRent | None:
    """The edge device bought against the cheapest cloud GPU that meets the same per-token latency."""
    chosen, scenario = result.chosen or result.closest, result.scenario
    if chosen is None or scenario.edge is None:
        return None
    device = chosen.device
    items = sorted(_items(catalog, device), key=lambda p: (p.count, p.price_usd))
    item = items[0] if items else None
    if scenario.edge.price_usd is not None:
        price, note, what = scenario.edge.price_usd, "from the scenario (edge.price_usd)", f"1 × {device.name}"
    elif item is not None:
        price, note, what = item.price_usd, _price_note(item), f"1 × {item.item}"
    else:
        price, note, what = None, "no purchase price of this device in the catalog (give edge.price_usd)", \
            f"1 × {device.name}"
    power, power_note = _power(catalog, item, device, 1)
    kwh, kwh_note = electricity_price(scenario)
    energy = _energy(power, kwh)
    rent, rent_usd, rent_note = _cheapest_rental(result, catalog)
    return BuyVsRent(what=what, price_usd=price, price_note=note, power_w=power, power_note=power_note,
                     electricity_usd_per_kwh=kwh, electricity_note=kwh_note, energy_usd_per_month=energy,
                     rent=rent, rent_usd_per_month=rent_usd, rent_note=rent_note,
                     break_even_months=_break_even(price, rent_usd, energy))


def _cheapest_rental(result, catalog) -> tuple[str | None, float | None, str]:
    """The cheapest single-GPU cloud offer on which the edge plan's model, format and engine meet its
    per-token latency (no thermal derate in a data centre), on-demand all month."""
    from sizeup.errors import SizeupError
    from sizeup.workload.inference import InferenceConfig, estimate_inference

    chosen, scenario = result.chosen or result.closest, result.scenario
    priced = []
    for device in catalog.devices.values():
        singles = [o for o in catalog.offers_for(device.id) if o.gpu_count == 1] if device.kind == "gpu" else []
        if singles:  # one GPU rented as a whole instance
            offer = min(singles, key=lambda o: (o.on_demand_usd_per_hour, o.id))
            priced.append((offer.on_demand_usd_per_hour, device.id, device, offer))
    traffic = scenario.traffic
    prompt, output = (traffic.prompt_tokens, traffic.output_tokens) if traffic else (256, 128)
    for hourly, _, device, offer in sorted(priced, key=lambda t: t[:2])[:RENT_SEARCH_LIMIT]:
        try:
            e = estimate_inference(result.arch, device, InferenceConfig(prompt=prompt, output=output,
                                                                        weights=chosen.quant, engine=chosen.engine),
                                   limits=False)
        except SizeupError:
            continue
        if e.memory.fits and e.decode is not None and e.decode.tokens_per_s is not None and \
                e.decode.latency_s.typical <= scenario.edge.latency_s:
            monthly = hourly * HOURS_PER_MONTH
            return (f"1 × {device.name} ({offer.provider} {offer.instance}, {offer.region})", monthly,
                    f"{chosen.quant} on {chosen.engine}: {e.decode.latency_s.typical * 1e3:,.1f} ms per token ≤ "
                    f"{scenario.edge.latency_s * 1e3:,.0f} ms; on-demand all month at ${hourly:,.3f}/h (price of "
                    f"{offer.price_date}); the {RENT_SEARCH_LIMIT} cheapest offers tried, cheapest first")
    return None, None, f"none of the {RENT_SEARCH_LIMIT} cheapest cloud GPUs meets the latency with this format"


def fleet_buy_vs_rent(result, catalog) -> BuyVsRent | None:
    """A rented serving fleet's peak GPUs bought as the catalog's items of the same device, against the
    plan's monthly bill; None when the catalog holds no price for the device or the plan is not rented."""
    chosen, scenario = result.chosen, result.scenario
    if chosen is None or chosen.owned or chosen.replicas is None or chosen.monthly is None:
        return None
    gpus = chosen.gpus * chosen.replicas.with_redundancy
    items = _items(catalog, chosen.device)
    if not items:
        return None
    item = min(items, key=lambda p: (math.ceil(gpus / p.count) * p.price_usd, p.id))
    units = math.ceil(gpus / item.count)
    power, power_note = _power(catalog, item, chosen.device, units)
    kwh, kwh_note = electricity_price(scenario)
    energy = _energy(power, kwh)
    price = units * item.price_usd
    return BuyVsRent(what=f"{units} × {item.item} ({units * item.count} GPUs for {gpus} planned)", price_usd=price,
                     price_note=_price_note(item), power_w=power, power_note=power_note,
                     electricity_usd_per_kwh=kwh, electricity_note=kwh_note, energy_usd_per_month=energy,
                     rent=f"the plan's fleet ({chosen.pricing_basis})", rent_usd_per_month=chosen.cost_usd,
                     rent_note="the sheet's monthly cost", break_even_months=_break_even(price, chosen.cost_usd, energy))
