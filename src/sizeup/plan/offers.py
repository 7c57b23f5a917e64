"""Which devices a scenario may use and which cloud offers carry them; the hourly price of one replica
(`hourly_price`, `replica_price`) lives with the offers in `sizeup.hardware.offer_price`, where a replica or
a job may live on them in `plan.topology`."""

from __future__ import annotations

from sizeup.hardware.catalog import Catalog
from sizeup.hardware.offer_price import hourly_price, replica_price
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.plan.regions import region_group
from sizeup.plan.scenario import Scenario

__all__ = ["check_constraints", "devices_for", "offers_for", "hourly_price", "replica_price", "cheapest_per_group"]


def check_constraints(scenario: Scenario, catalog: Catalog) -> None:
    """Refuse, in one line naming the value, a provider or region no offer of the catalog has, an engine
    sizeup has no profile of, or a weight format it does not know — before the search, which would
    otherwise end in "no configuration meets the scenario". Devices resolve by name (hardware.resolve)."""
    from sizeup.errors import ConfigError
    from sizeup.formats import get_format
    from sizeup.plan.scenario_keys import closest
    from sizeup.engines.base import parse_engine

    c = scenario.constraints
    for key, names, known in (("providers", c.providers, {o.provider for o in catalog.offers.values()}),
                              ("regions", c.regions, {o.region for o in catalog.offers.values()})):
        for name in names:
            if name not in known:
                near = closest(name, known)
                hint = f"did you mean {near!r}? " if near else ""
                shown = ", ".join(sorted(known)[:30]) + (", …" if len(known) > 30 else "")
                raise ConfigError(f"scenario key 'constraints.{key}' = {name!r}: no offer in the catalog has this "
                                  f"{key[:-1]} ({hint}known: {shown or 'none'})")
    checks = [("engines", c.engines, parse_engine)] if scenario.task in ("chat", "api", "batch", "edge") else []
    if scenario.task != "vision":  # a vision model's fp16/fp32 is checked with the scenario
        checks.append(("quantizations", c.quantizations, get_format))
    for key, names, lookup in checks:
        for name in names:
            try:
                lookup(name)
            except ConfigError as e:
                raise ConfigError(f"scenario key 'constraints.{key}' = {name!r}: {e}") from None
    from sizeup.errors import ResolveError

    for key, name in [("devices", d) for d in c.devices] + [(f"owned[{i}].device", o.device)
                                                             for i, o in enumerate(c.owned)]:
        try:
            catalog.device(name)
        except ResolveError as e:  # it lists the closest names
            raise ResolveError(f"scenario key 'constraints.{key}': {e}") from None


def devices_for(catalog: Catalog, scenario: Scenario) -> list[DeviceSpec]:
    names = scenario.constraints.devices
    if names:
        return [catalog.device(n) for n in names]
    with_offers = {o.gpu for o in catalog.offers.values()}
    owned = {catalog.device(o.device).id for o in scenario.constraints.owned}
    return [d for d in catalog.devices.values() if d.kind == "gpu" and (d.id in with_offers or d.id in owned)]


def offers_for(catalog: Catalog, scenario: Scenario, device: DeviceSpec) -> list[Offer]:
    """The offers of `device` in the scenario's providers and regions (every GPU count: the caller places
    replicas and jobs on them, plan.topology)."""
    c = scenario.constraints
    return [o for o in catalog.offers_for(device.id)
            if (not c.providers or o.provider in c.providers) and (not c.regions or o.region in c.regions)]


def cheapest_per_group(offers: list[Offer], gpus: int, basis: str) -> dict[str, tuple[Offer, float]]:
    """Region group -> (offer, hourly price of one replica of `gpus` GPUs) of the cheapest offer in the group."""
    by_group: dict[str, list[Offer]] = {}
    for o in offers:
        by_group.setdefault(region_group(o.region), []).append(o)
    out = {}
    for group, members in by_group.items():
        offer, hourly = replica_price(members, gpus, basis)
        if offer is not None:
            out[group] = (offer, hourly)
    return out
