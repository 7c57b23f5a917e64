"""Purchase prices and power at the wall: what buying a device (or a machine of N of them) costs.

Data in `data/purchases/*.yaml` and in `purchases/` of each catalog folder (`--catalog DIR`): one file per
market, each item a thing one can buy (a card, a developer kit, a Mac of one configuration, an 8-GPU
server) naming the catalog device it holds and how many. Every price carries its date, where it was read
and when: a launch MSRP (`msrp_usd`, `msrp_date`) and/or a current street price (`street_usd`,
`street_date`, `street_where`). Prices change by the week; nothing here is current beyond its date.

Power at the wall: an item may state its own (a published system maximum: DGX, Mac, Jetson kit), else
the file's `wall_power` method applies, stated in the data:
    wall W = (count x the device's TDP + host_w) / psu_efficiency
with host_w and psu_efficiency sourced in the file. A device with no TDP gives an unknown wall power.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import read_yaml, subfolder_files
from sizeup.hardware.schema import DeviceSpec, _Fields

__all__ = ["Purchase", "WallPower", "WallPowerMethod", "purchases", "purchases_for", "wall_power", "parse_purchases"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WallPowerMethod:
    host_w: float
    """Power of the rest of the machine under load (CPU, memory, drives, fans), watts."""
    psu_efficiency: float
    basis: str
    source: str
    retrieved: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Purchase:
    id: str
    item: str
    """What the price buys, as sold ('Mac mini (M4, 16GB, 256GB SSD)', '8x H100 SXM HGX server')."""
    device: str
    """Catalog id of the device inside (a memory or power-mode variant id where it matters)."""
    count: int
    market: str
    msrp_usd: float | None = None
    msrp_date: str | None = None
    street_usd: float | None = None
    street_date: str | None = None
    street_where: str | None = None
    wall_power_w: float | None = None
    """Published power at the wall of the whole item (None: derived by the file's method)."""
    wall_power_basis: str | None = None
    method: WallPowerMethod | None = None
    notes: tuple[str, ...] = ()
    source: str
    retrieved: str
    path: str = ""

    @property
    def price_usd(self) -> float:
        """The street price when one is known, else the launch MSRP."""
        return self.street_usd if self.street_usd is not None else self.msrp_usd  # type: ignore[return-value]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "item": self.item, "device": self.device, "count": self.count,
                "market": self.market, "msrp_usd": self.msrp_usd, "msrp_date": self.msrp_date,
                "street_usd": self.street_usd, "street_date": self.street_date, "street_where": self.street_where,
                "wall_power_w": self.wall_power_w, "wall_power_basis": self.wall_power_basis,
                "notes": list(self.notes), "source": self.source, "retrieved": self.retrieved}


@dataclass(frozen=True, slots=True, kw_only=True)
class WallPower:
    watts: float | None
    """Power drawn at the wall under full load; None when neither published nor derivable."""
    basis: str

    def to_dict(self) -> dict[str, Any]:
        return {"watts": self.watts, "basis": self.basis}


_ITEM_KEYS = {"id", "item", "device", "count", "msrp_usd", "msrp_date", "street_usd", "street_date", "street_where",
              "wall_power_w", "wall_power_basis", "notes", "source", "retrieved"}


def _method(f: _Fields | None) -> WallPowerMethod | None:
    if f is None:
        return None
    f.check_keys({"host_w", "psu_efficiency", "basis", "source", "retrieved"})
    efficiency = f.number("psu_efficiency")
    if efficiency > 1:
        raise f.fail("psu_efficiency", "a fraction in (0, 1]")
    return WallPowerMethod(host_w=f.number("host_w", positive=False), psu_efficiency=efficiency,
                           basis=f.text("basis"), source=f.text("source"), retrieved=f.date("retrieved"))


def _item(f: _Fields, market: str, method: WallPowerMethod | None) -> Purchase:
    f.check_keys(_ITEM_KEYS)
    prices = {}
    for kind in ("msrp", "street"):
        usd = f.number(f"{kind}_usd", required=False)
        date = f.date(f"{kind}_date") if f.data.get(f"{kind}_date") is not None else None
        if (usd is None) != (date is None):
            raise f.fail(f"{kind}_date" if date is None else f"{kind}_usd",
                         f"both {kind}_usd and {kind}_date (a price is nothing without its date)")
        prices[kind] = (usd, date)
    if prices["msrp"][0] is None and prices["street"][0] is None:
        raise f.fail("msrp_usd", "a launch price (msrp_usd, msrp_date) or a street price (street_usd, street_date)")
    where = f.text("street_where", required=False)
    if prices["street"][0] is not None and where is None:
        raise f.fail("street_where", "where the street price was read (retailer, listing, article)")
    wall = f.number("wall_power_w", required=False)
    basis = f.text("wall_power_basis", required=False)
    if wall is not None and basis is None:
        raise f.fail("wall_power_basis", "what the wall power figure is and where it comes from")
    return Purchase(id=f.text("id"), item=f.text("item"), device=f.text("device"),
                    count=f.integer("count") or 1, market=market,
                    msrp_usd=prices["msrp"][0], msrp_date=prices["msrp"][1],
                    street_usd=prices["street"][0], street_date=prices["street"][1], street_where=where,
                    wall_power_w=wall, wall_power_basis=basis, method=method, notes=f.strings("notes"),
                    source=f.text("source"), retrieved=f.date("retrieved"), path=f.path)


def parse_purchases(data: Any, path: str | Path) -> list[Purchase]:
    """One purchases file: `market`, an optional `wall_power` method, and `items`."""
    f = _Fields(data, str(path))
    f.check_keys({"market", "wall_power", "items"})
    market = f.text("market")
    method = _method(f.mapping("wall_power"))
    items = f.data.get("items")
    if not isinstance(items, list) or not items:
        raise f.fail("items", "a non-empty list of purchasable items")
    return [_item(_Fields(item, str(path), f"items[{i}]."), market, method) for i, item in enumerate(items)]


@lru_cache(maxsize=8)
def _load(folders: tuple[str, ...]) -> tuple[Purchase, ...]:
    by_id: dict[str, Purchase] = {}
    for path in subfolder_files("purchases", folders):
        for p in parse_purchases(read_yaml(path), path):
            by_id[p.id] = p  # a later folder's item of the same id replaces the built-in one
    return tuple(by_id.values())


def purchases(catalog) -> tuple[Purchase, ...]:
    """Every purchasable item of the catalog's folders, each checked to name a device of the catalog."""
    items = _load(tuple(catalog.folders))
    for p in items:
        if p.device not in catalog.devices:
            raise CatalogError(f"{p.path}: item {p.id!r} field 'device' = {p.device!r}: expected a device id of "
                               f"the catalog")
    return items


def purchases_for(catalog, device: DeviceSpec) -> list[Purchase]:
    """The items holding `device` (exactly this id: a Mac's price belongs to its memory size); a power mode is
    a setting of the module it is a mode of, so it takes that module's items."""
    ids = {device.id} | ({device.variant_of} if device.power_mode is not None and device.variant_of else set())
    return [p for p in purchases(catalog) if p.device in ids]


def wall_power(purchase: Purchase, catalog) -> WallPower:
    """Power at the wall of `purchase` under full load: its published figure, else the file's method."""
    if purchase.wall_power_w is not None:
        return WallPower(watts=purchase.wall_power_w, basis=purchase.wall_power_basis or "published")
    device = catalog.devices.get(purchase.device)
    method = purchase.method
    if method is None:
        return WallPower(watts=None, basis=f"not published for {purchase.id} and no wall_power method in "
                                           f"{Path(purchase.path).name}: unknown")
    if device is None or device.tdp_w is None:
        return WallPower(watts=None, basis=f"{purchase.device} has no TDP in the catalog: wall power unknown")
    watts = (purchase.count * device.tdp_w + method.host_w) / method.psu_efficiency
    return WallPower(watts=watts, basis=(
        f"derived: ({purchase.count} x {device.tdp_w:g} W TDP + {method.host_w:g} W host) / "
        f"{method.psu_efficiency:g} PSU efficiency; {method.basis} ({method.source}, read {method.retrieved})"))
