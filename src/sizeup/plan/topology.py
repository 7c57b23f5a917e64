"""Realisable topology: where a replica or a job's GPUs live, as the offers can deliver them.

- A tensor- or pipeline-parallel group lives inside one instance: a serving replica of g GPUs runs only on
  offers of at least g GPUs per instance (⌊GPUs per instance / g⌋ replicas to an instance), and its
  collectives run on the link the offer states — NVLink where it says so, else PCIe (a marketplace box that
  states no link is taken to be PCIe: `installed`).
- Replicas are whole instances, or whole shares of one.
- A job larger than one instance spans instances only on offers that state their node-to-node network
  (kind and bandwidth), and is priced on that network; on any other offer it is refused, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sizeup.hardware.offer_price import hourly_price
from sizeup.hardware.schema import DeviceSpec, Offer
from sizeup.units import GIGA

__all__ = ["installed", "link_text", "link_class", "replica_offers", "JobPlacement", "place_job", "device_in_offer",
           "offer_nodes"]


def installed(device: DeviceSpec, offer: Offer | None) -> DeviceSpec:
    """`device` as `offer` installs it: its GPU-to-GPU link is the offer's stated one, else none (then the
    collectives run over the device's PCIe host link, price.comm.device_link). Without an offer (owned
    cards) the device's own link."""
    if offer is None or offer.interconnect == device.interconnect:
        return device
    return replace(device, interconnect=offer.interconnect)


def link_class(offer: Offer) -> str:
    """"nvlink4" (the kind the offer states) or "pcie" (stated or assumed): offers of one class price a
    tensor-parallel replica alike."""
    return offer.interconnect.kind if offer.interconnect is not None else "pcie"


def link_text(device: DeviceSpec, offer: Offer | None) -> str:
    """The link a multi-GPU replica or job uses inside one instance, and whether the offer states it."""
    if offer is not None and offer.interconnect is not None:
        return f"{offer.interconnect.kind} {offer.interconnect.bytes_per_s / GIGA:,.0f} GB/s (stated by {offer.id})"
    pcie = f"PCIe {device.pcie_gen}.0" if device.pcie_gen else "PCIe"
    if offer is None:
        return (f"{device.interconnect.kind} (the device's own)" if device.interconnect is not None
                else f"{pcie} (the device's host link)")
    return f"{pcie} (assumed: {offer.id} states no GPU link)"


def replica_offers(offers: list[Offer], gpus: int) -> list[Offer]:
    """Offers that hold a whole replica of `gpus` GPUs in one instance."""
    return [o for o in offers if o.gpu_count >= gpus]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobPlacement:
    offer: Offer
    instances: int
    gpus_per_instance: int
    """GPUs of the job on each instance (at most the instance's)."""
    hourly_usd: float
    """All instances, on `basis`."""
    basis: str
    network_gbit_per_s: float | None
    """Per instance, when the job spans instances."""
    text: str

    @property
    def nodes(self) -> int:
        return self.instances

    def to_dict(self) -> dict[str, Any]:
        return {"offer": self.offer.id, "instances": self.instances, "gpus_per_instance": self.gpus_per_instance,
                "hourly_usd": self.hourly_usd, "basis": self.basis, "network_gbit_per_s": self.network_gbit_per_s,
                "text": self.text}


def place_job(device: DeviceSpec, gpus: int, offers: list[Offer], basis: str = "on-demand"
              ) -> tuple[JobPlacement | None, str]:
    """The cheapest way to run a job of `gpus` GPUs of `device` on `offers`: one instance that holds them,
    or whole instances joined by a stated network. (None, why) when no offer can."""
    mine = [o for o in offers if o.gpu == device.id]
    best: JobPlacement | None = None
    for o in mine:
        instance_hourly, used = hourly_price(o, basis)
        if o.gpu_count >= gpus:
            placement = JobPlacement(offer=o, instances=1, gpus_per_instance=gpus, hourly_usd=instance_hourly,
                                     basis=used, network_gbit_per_s=None,
                                     text=f"1 × {o.id} ({gpus} of its {o.gpu_count} GPUs"
                                          + (", the whole instance billed" if gpus < o.gpu_count else "")
                                          + f"; {link_text(device, o)})")
        elif o.network_bytes_per_s and gpus % o.gpu_count == 0:
            n = gpus // o.gpu_count
            gbit = o.network_bytes_per_s * 8 / GIGA
            placement = JobPlacement(offer=o, instances=n, gpus_per_instance=o.gpu_count, hourly_usd=n * instance_hourly,
                                     basis=used, network_gbit_per_s=gbit,
                                     text=f"{n} × {o.id} joined by {o.network_kind} at {gbit:,.0f} Gb/s per instance "
                                          f"(stated); {link_text(device, o)} inside each")
        else:
            continue
        if best is None or (placement.hourly_usd, o.id) < (best.hourly_usd, best.offer.id):
            best = placement
    if best is not None:
        return best, ""
    if not mine:
        return None, f"no offer carries {device.id}"
    largest = max(mine, key=lambda o: o.gpu_count)
    networked = [o for o in mine if o.network_bytes_per_s]
    why = (f"no {device.id} offer holds {gpus} GPUs in one instance (the largest, {largest.id}, has "
           f"{largest.gpu_count})")
    if networked:
        sizes = sorted({o.gpu_count for o in networked})
        why += (f", and the offers that state a network between instances ({', '.join(o.id for o in networked)}) "
                f"hold {'/'.join(map(str, sizes))} GPUs each, of which {gpus} is not a multiple")
    else:
        why += ", and none states a network between instances: a multi-node job cannot be placed on them"
    return None, why


def device_in_offer(catalog, device: DeviceSpec, offer_id: str) -> tuple[DeviceSpec, Offer]:
    """`device` as the offer `offer_id` installs it (`estimate --offer`, `train --offer`): one line when the offer
    is unknown or carries another device."""
    from sizeup.errors import ConfigError

    offer = catalog.offers.get(offer_id)
    if offer is None:
        from sizeup.plan.scenario_keys import closest

        near = closest(offer_id, set(catalog.offers))
        raise ConfigError(f"--offer {offer_id!r}: no such offer" + (f" (did you mean {near!r}?)" if near else "")
                          + " (see 'sizeup hw offers')")
    if offer.gpu != device.id:
        raise ConfigError(f"--offer {offer_id!r} carries {offer.gpu}, not {device.id}")
    return installed(device, offer), offer


def offer_nodes(offer: Offer, gpus: int, gpus_per_node: int | None, network_gbit_per_s: float | None
                ) -> tuple[int | None, float | None, str]:
    """(GPUs per node, network per node in Gb/s, the sentence saying so) of `gpus` GPUs on `offer` (`estimate
    --offer`): its GPUs per instance are the node and its stated network joins the instances, where `--gpus-per-node`
    and `--network-gbps` do not say otherwise; an offer that states no network leaves the default (workload/nodes.py).
    The sentence is empty where the GPUs fit one instance or the flags decide both."""
    per_node = gpus_per_node or offer.gpu_count
    stated = offer.network_bytes_per_s * 8 / GIGA if offer.network_bytes_per_s else None
    network = network_gbit_per_s or stated
    if gpus <= per_node or (gpus_per_node and (network_gbit_per_s or stated is None)):
        return per_node, network, ""
    parts = [] if gpus_per_node else [f"its {offer.gpu_count} GPUs per instance are a node (as --gpus-per-node "
                                      f"{offer.gpu_count})"]
    if not network_gbit_per_s:
        parts.append(f"the instances are joined by its stated {offer.network_kind} at {stated:,.0f} Gb/s per "
                     f"instance (as --network-gbps)" if stated else
                     "it states no network between instances: the default network is assumed")
    return per_node, network, f"--offer {offer.id}: " + "; ".join(parts)
