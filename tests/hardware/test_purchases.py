"""Issue 30.3: dated, sourced purchase prices and power at the wall; issue 33.5: thermal trip points."""

from __future__ import annotations

import dataclasses
import math

import pytest

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import load_catalog
from sizeup.hardware.purchase import parse_purchases, purchases, purchases_for, wall_power
from sizeup.hardware.thermal import derate_at, thermal_profile


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(include_user=False)


def test_every_price_has_a_source_a_date_and_where_it_was_read(catalog):
    items = purchases(catalog)
    assert len(items) >= 40
    for p in items:
        assert p.source and p.retrieved and p.device in catalog.devices, p.id
        assert p.msrp_usd is not None or p.street_usd is not None, p.id
        assert (p.msrp_usd is None) == (p.msrp_date is None) and (p.street_usd is None) == (p.street_date is None), p.id
        if p.street_usd is not None:
            assert p.street_where, p.id
        assert p.price_usd > 0


@pytest.mark.parametrize("device_id", ["rtx-5090", "rtx-4090", "rtx-pro-6000", "apple-m4-16gb", "jetson-orin-nano-8gb",
                                       "h100-sxm-80gb", "h200-sxm-141gb", "a100-sxm-80gb"])
def test_the_asked_for_classes_have_prices(catalog, device_id):
    assert purchases_for(catalog, catalog.devices[device_id])


def test_wall_power_of_a_card_is_its_tdp_plus_the_sourced_host_over_psu_efficiency(catalog):
    (item,) = [p for p in purchases(catalog) if p.id == "rtx-4090"]
    wall = wall_power(item, catalog)
    assert wall.watts == pytest.approx((450 + 120) / 0.90) and wall.basis.startswith("derived:")


def test_published_wall_power_wins_and_unknown_stays_unknown(catalog):
    by_id = {p.id: p for p in purchases(catalog)}
    assert wall_power(by_id["dgx-h100"], catalog).watts == 10200
    assert wall_power(by_id["mac-mini-m4-16gb"], catalog).watts is None  # no published figure, no method
    assert wall_power(by_id["rtx-3080-ti"], catalog).watts is None  # the catalog has no TDP for it


def test_purchase_is_frozen(catalog):
    with pytest.raises(dataclasses.FrozenInstanceError):
        purchases(catalog)[0].msrp_usd = 1  # type: ignore[misc]


@pytest.mark.parametrize("item,field", [
    ({"msrp_usd": 100}, "msrp_date"),
    ({"street_usd": 100, "street_date": "2026-01-01"}, "street_where"),
    ({}, "msrp_usd"),
    ({"msrp_usd": 100, "msrp_date": "2026-01-01", "wall_power_w": 500}, "wall_power_basis"),
])
def test_a_price_without_its_date_or_place_is_refused(item, field):
    data = {"market": "m", "items": [{"id": "x", "item": "X", "device": "a10", "source": "s", "retrieved": "2026-01-01",
                                      **item}]}
    with pytest.raises(CatalogError) as err:
        parse_purchases(data, "p.yaml")
    assert "p.yaml" in str(err.value) and f"items[0].{field}" in str(err.value)


def test_an_item_naming_no_device_of_the_catalog_is_refused(tmp_path):
    (tmp_path / "purchases").mkdir()
    (tmp_path / "purchases" / "mine.yaml").write_text(
        "market: m\nitems:\n- {id: y, item: Y, device: no-such-gpu, msrp_usd: 1, msrp_date: 2026-01-01, "
        "source: s, retrieved: 2026-01-01}\n")
    with pytest.raises(CatalogError, match="no-such-gpu"):
        purchases(load_catalog([str(tmp_path)], include_user=False))


def test_thermal_trips_of_orin_and_their_derate(catalog):
    nano = catalog.devices["jetson-orin-nano-8gb-15w"]  # a power-mode variant takes its family's profile
    assert thermal_profile(nano) is not None
    assert derate_at(nano, 60).clock_fraction == 1.0
    hot = derate_at(nano, 100)
    assert hot.trip.name == "sw-throttle" and hot.clock_fraction is None  # the loss is not published: unknown
    assert derate_at(nano, 106).clock_fraction == 0
    none = derate_at(catalog.devices["rtx-4090"], 100)
    assert none.clock_fraction is None and "no thermal data" in none.basis
    with pytest.raises(CatalogError):
        derate_at(nano, math.nan)
