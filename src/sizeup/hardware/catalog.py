"""The catalog: built-in device and offer files plus the user's own folders (later ones override)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from sizeup.errors import CatalogError
from sizeup.hardware.schema import DeviceSpec, Offer, parse_device, parse_fx, parse_offers

__all__ = ["Catalog", "load_catalog", "user_config_dir", "builtin_data_dir"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def builtin_data_dir() -> Path:
    return Path(str(resources.files("sizeup") / "data"))


def user_config_dir() -> Path:
    """$SIZEUP_CONFIG_DIR, else $XDG_CONFIG_HOME/sizeup, else ~/.config/sizeup."""
    if os.environ.get("SIZEUP_CONFIG_DIR"):
        return Path(os.environ["SIZEUP_CONFIG_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "sizeup"


def read_yaml(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise CatalogError(f"{path}:{where} is not valid YAML ({getattr(e, 'problem', None) or e})") from e
    except OSError as e:
        raise CatalogError(f"{path}: cannot be read ({e.strerror})") from e


@dataclass(frozen=True, slots=True)
class Catalog:
    devices: dict[str, DeviceSpec]
    offers: dict[str, Offer]
    folders: tuple[str, ...]

    def offers_for(self, device_id: str | None = None) -> list[Offer]:
        return [o for o in self.offers.values() if device_id is None or o.gpu == device_id]

    def device(self, name: str) -> DeviceSpec:
        from sizeup.hardware.resolve import resolve_device

        return resolve_device(self, name)


def _yaml_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.y*ml") if p.suffix in (".yaml", ".yml"))


def _layout(folder: Path) -> tuple[list[Path], list[Path]]:
    """(device files, offer files) of a catalog folder: DIR/devices, DIR/offers, or YAML files in DIR
    (a file with an `offers` key is an offer file)."""
    devices, offers = _yaml_files(folder / "devices"), _yaml_files(folder / "offers")
    for path in _yaml_files(folder):
        (offers if path.name == "fx.yaml" or _is_offer_file(path) else devices).append(path)
    return devices, offers


def _is_offer_file(path: Path) -> bool:
    data = read_yaml(path)
    return isinstance(data, dict) and "offers" in data


@lru_cache(maxsize=8)
def _load(folders: tuple[str, ...]) -> Catalog:
    devices: dict[str, DeviceSpec] = {}
    offer_files: list[Path] = []
    fx: dict[str, float] = {}
    for folder in folders:
        device_files, offer_paths = _layout(Path(folder))
        for path in device_files:
            device = parse_device(read_yaml(path), path)
            devices[device.id] = device
        for path in offer_paths:
            if path.name == "fx.yaml":
                fx |= parse_fx(read_yaml(path), path)
            else:
                offer_files.append(path)
    offers: dict[str, Offer] = {}
    for path in offer_files:
        for offer in parse_offers(read_yaml(path), path, fx):
            if offer.gpu not in devices:
                raise CatalogError(f"{path}: offer {offer.id!r} field 'gpu' = {offer.gpu!r}: expected a device id "
                                   f"of the catalog")
            offers[offer.id] = offer
    _check_aliases(devices.values())
    return Catalog(devices=devices, offers=offers, folders=folders)


def _check_aliases(devices: Iterable[DeviceSpec]) -> None:
    from sizeup.hardware.resolve import normalize_name

    owner: dict[str, str] = {}
    for d in devices:
        for alias in (d.id, *d.aliases):
            key = normalize_name(alias)
            if key in owner and owner[key] != d.id:
                raise CatalogError(f"{d.path}: alias {alias!r} is also a name of device {owner[key]!r}")
            owner[key] = d.id


def load_catalog(extra: Iterable[str | Path] = (), *, include_user: bool = True) -> Catalog:
    """The built-in catalog, then the user config folder, then each `extra` folder (`--catalog DIR`)."""
    folders = [builtin_data_dir()]
    user = user_config_dir()
    if include_user and user.is_dir():
        folders.append(user)
    for folder in extra:
        path = Path(folder).expanduser()
        if not path.is_dir():
            raise CatalogError(f"catalog folder {str(folder)!r} does not exist")
        folders.append(path)
    return _load(tuple(str(f) for f in folders))
