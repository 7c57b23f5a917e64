"""Region groups (data/plan/regions.yaml) and the cheapest option of each: the headline quotes them beside the
cheapest anywhere, so a plan that goes to a far-away marketplace says what the cheapest is closer to home."""

from __future__ import annotations

from functools import lru_cache

from sizeup.errors import CatalogError

__all__ = ["region_group", "cheapest_by_group"]


@lru_cache(maxsize=1)
def _groups() -> dict[str, str]:
    from sizeup.hardware.catalog import builtin_data_dir, read_yaml

    path = builtin_data_dir() / "plan" / "regions.yaml"
    data = read_yaml(path)
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, dict) or not data.get("source") or not data.get("retrieved"):
        raise CatalogError(f"{path}: expected groups (name -> list of regions), source and retrieved")
    out: dict[str, str] = {}
    for name, regions in groups.items():
        if not isinstance(regions, list):
            raise CatalogError(f"{path}: group {name!r}: expected a list of regions")
        for region in regions:
            if str(region) in out:
                raise CatalogError(f"{path}: region {region!r} is in two groups")
            out[str(region)] = str(name)
    return out


def region_group(region: str) -> str:
    """The group of a region code; a region no group lists is its own group."""
    return _groups().get(region, region)


def cheapest_by_group(candidates) -> dict[str, dict]:
    """Group -> {"label", "offer", "region", "cost_usd", "pricing_basis"} of the cheapest candidate in each
    region group, from each candidate's `detail["by_region"]` (the search prices every family in every group)."""
    out: dict[str, dict] = {}
    for c in candidates:
        for group, entry in c.detail.get("by_region", {}).items():
            if group not in out or entry["cost_usd"] < out[group]["cost_usd"]:
                label = f"{c.gpus}x {c.device.id} {c.quant} {c.engine} ({entry['offer']})"
                out[group] = {**entry, "label": label}
    return dict(sorted(out.items(), key=lambda kv: kv[1]["cost_usd"]))
