"""The catalog: built-in device and offer files plus the user's own folders (later ones override)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sizeup.errors import CatalogError
from sizeup.files import check_unchanged, open_regular, user_path
from sizeup.hardware.schema import DeviceSpec, Offer, parse_device, parse_fx, parse_offers

__all__ = ["Catalog", "load_catalog", "user_config_dir", "builtin_data_dir", "read_yaml", "load_architectures",
           "MAX_DATA_FILE_BYTES"]

MAX_DATA_FILE_BYTES = 1 << 20
"""A catalog or data file larger than this is refused before parsing (the largest built-in one is ~10 KiB)."""
ARCHITECTURES_FILE = "architectures.yaml"


def builtin_data_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "data"  # the package's own folder (importlib.resources costs ~8 ms)


def user_config_dir() -> Path:
    """$SIZEUP_CONFIG_DIR, else $XDG_CONFIG_HOME/sizeup, else ~/.config/sizeup."""
    if os.environ.get("SIZEUP_CONFIG_DIR"):
        return Path(os.environ["SIZEUP_CONFIG_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "sizeup"


def read_yaml(path: Path, *, cache: bool = True) -> object:
    """Parse one data file (YAML by `sizeup.yaml_strict`): a regular file (`sizeup.files`: a FIFO, a device or a link
    to one is refused, never waited on) of at most MAX_DATA_FILE_BYTES, refused unread when larger. With
    `cache`, the parsed contents are kept as JSON keyed by the file's path, size and mtime
    (hardware.catalog_cache), so the next process reads them without importing yaml."""
    with open_regular(path, what="catalog file", error=CatalogError, limit=MAX_DATA_FILE_BYTES) as opened:
        st = os.fstat(opened.fh.fileno())
        if cache:
            from sizeup.hardware.catalog_cache import MISSING, read_data_cached

            data = read_data_cached(Path(path), st)
            if data is not MISSING:
                return data
        try:
            raw = opened.fh.read(MAX_DATA_FILE_BYTES + 1)
        except OSError as e:
            raise CatalogError(f"{path}: cannot be read ({e.strerror})") from None
        if len(raw) > MAX_DATA_FILE_BYTES:
            raise CatalogError(f"{path}: more than the {MAX_DATA_FILE_BYTES:,}-byte limit for a catalog or data file")
        check_unchanged(opened, CatalogError)
    from sizeup.yaml_strict import load_yaml  # YAML 1.2 numbers and booleans, no key twice, no alias bomb

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CatalogError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start:,})") from None
    data = load_yaml(text, str(path), CatalogError)
    if cache:
        from sizeup.hardware.catalog_cache import write_data_cached

        write_data_cached(Path(path), st, data)
    return data


@dataclass(frozen=True, slots=True)
class Catalog:
    devices: Mapping[str, DeviceSpec]  # a dict, or from the cache a mapping that decodes each device when asked
    offers: Mapping[str, Offer]
    folders: tuple[str, ...]

    def offers_for(self, device_id: str | None = None) -> list[Offer]:
        return [o for o in self.offers.values() if device_id is None or o.gpu == device_id]

    def device(self, name: str) -> DeviceSpec:
        from sizeup.hardware.resolve import resolve_device

        return resolve_device(self, name)


def _yaml_files(folder: Path) -> list[Path]:
    return sorted((p for p in folder.glob("*.y*ml") if p.suffix in (".yaml", ".yml") and p.name != ARCHITECTURES_FILE),
                  key=str)


def subfolder_files(name: str, folders: tuple[str, ...]) -> list[Path]:
    """The YAML files of `data/NAME/` and then of `NAME/` in each catalog folder (purchases, thermal)."""
    out: list[Path] = []
    for folder in [builtin_data_dir(), *map(Path, folders)]:
        out += [p for p in _yaml_files(folder / name) if p not in out]
    return out


def _layout(folder: Path) -> tuple[list[Path], list[Path]]:
    """(device files, offer files) of a catalog folder: DIR/devices, DIR/offers, or YAML files in DIR
    (a file with an `offers` key is an offer file)."""
    devices, offers = _yaml_files(folder / "devices"), _yaml_files(folder / "offers")
    for path in _yaml_files(folder):
        (offers if path.name == "fx.yaml" or _is_offer_file(path) else devices).append(path)
    return devices, offers


def _is_offer_file(path: Path) -> bool:
    data = read_yaml(path, cache=False)
    return isinstance(data, dict) and "offers" in data


def load_architectures(folders: tuple[str, ...] = ()):
    """The built-in architecture table, then any `architectures.yaml` in the given folders (merged by id)."""
    from sizeup.hardware.architectures import parse_architectures

    path = builtin_data_dir() / ARCHITECTURES_FILE
    table = parse_architectures(read_yaml(path), path)
    for folder in folders:
        extra = Path(folder) / ARCHITECTURES_FILE
        if extra.exists() and extra != path:  # a FIFO or a folder of that name is refused by read_yaml
            more = parse_architectures(read_yaml(extra), extra)
            table.architectures.update(more.architectures)
    return table


def _source_files(folders: tuple[str, ...]) -> list[Path | os.DirEntry]:
    """Every file a catalog of `folders` is built from (the cache key covers all of them): the files `_yaml_files`
    lists, as directory entries (their `stat()` costs a third of a path's, and this runs at every start-up)."""
    files: list[Path | os.DirEntry] = [builtin_data_dir() / ARCHITECTURES_FILE]
    for folder in folders:
        root = Path(folder)
        files += _yaml_entries(root / "devices") + _yaml_entries(root / "offers") + _yaml_entries(root)
        if (root / ARCHITECTURES_FILE).exists():
            files.append(root / ARCHITECTURES_FILE)
    return files


def _yaml_entries(folder: Path) -> list[os.DirEntry]:
    """`_yaml_files(folder)` as directory entries (a name `Path.suffix` reads as no suffix, '.yaml', is left out
    there and here)."""
    try:
        with os.scandir(folder) as entries:
            found = [e for e in entries if e.name.endswith((".yaml", ".yml"))
                     and e.name not in (".yaml", ".yml", ARCHITECTURES_FILE)]
    except OSError:  # no such folder: no files
        return []
    return sorted(found, key=lambda e: e.path)


def _code_files() -> list[Path]:
    here = Path(__file__).parent
    return [*(here / name for name in ("catalog.py", "catalog_cache.py", "schema.py", "architectures.py", "variants.py")),
            here.parent / "yaml_strict.py"]


@lru_cache(maxsize=8)
def _load(folders: tuple[str, ...]) -> Catalog:
    from sizeup.hardware import catalog_cache

    key = catalog_cache.content_key(_source_files(folders), _code_files())
    cached = catalog_cache.read_cached(key, lambda: _build(folders))  # each device decoded when first asked for
    if cached is not None:
        return Catalog(devices=cached[0], offers=cached[1], folders=folders)
    devices, offers = _build(folders)
    catalog_cache.write_cached(key, devices, offers)
    return Catalog(devices=devices, offers=offers, folders=folders)


def _build(folders: tuple[str, ...]) -> tuple[dict[str, DeviceSpec], dict[str, Offer]]:
    from sizeup.hardware.architectures import complete_device

    table = load_architectures(folders)
    devices: dict[str, DeviceSpec] = {}
    raw: dict[str, object] = {}
    offer_files: list[Path] = []
    fx: dict[str, float] = {}
    for folder in folders:
        device_files, offer_paths = _layout(Path(folder))
        for path in device_files:
            data = read_yaml(path, cache=False)
            device = parse_device(data, path)
            devices[device.id] = complete_device(device, table)
            raw[device.id] = data
        for path in offer_paths:
            if path.name == "fx.yaml":
                fx |= parse_fx(read_yaml(path, cache=False), path)
            else:
                offer_files.append(path)
    _add_variants(devices, raw, table.device_clock_range)
    offers: dict[str, Offer] = {}
    for path in offer_files:
        for offer in parse_offers(read_yaml(path, cache=False), path, fx):
            if offer.gpu not in devices:
                raise CatalogError(f"{path}: offer {offer.id!r} field 'gpu' = {offer.gpu!r}: expected a device id "
                                   f"of the catalog")
            offers[offer.id] = offer
    _check_aliases(devices.values())
    _check_links(devices)
    return devices, offers


def _add_variants(devices: dict[str, DeviceSpec], raw: dict[str, object], widen: tuple[float, float]) -> None:
    """Each device's memory sizes and power modes as devices of their own (hardware.variants); a device
    file with a variant's id wins over the generated one."""
    from sizeup.hardware.variants import expand_variants, link_host_memory

    for device_id, data in raw.items():
        base, variants = expand_variants(devices[device_id], data, widen)
        devices[device_id] = base
        for v in variants:
            devices.setdefault(v.id, v)
    for device_id in [d.id for d in devices.values() if d.host_cpu]:
        devices[device_id] = link_host_memory(devices[device_id], devices)


def _check_links(devices: dict[str, DeviceSpec]) -> None:
    """Variant groups have exactly one preferred variant; host_cpu names a CPU of the catalog."""
    groups: dict[str, list[DeviceSpec]] = {}
    for d in devices.values():
        if d.variant_group:
            groups.setdefault(d.variant_group, []).append(d)
        if d.host_cpu is not None and (d.host_cpu not in devices or devices[d.host_cpu].kind != "cpu"):
            raise CatalogError(f"{d.path}: field 'host_cpu' = {d.host_cpu!r}: expected the id of a cpu device "
                               f"of the catalog")
    for group, members in groups.items():
        preferred = [d.id for d in members if d.preferred_variant]
        if len(preferred) != 1:
            first = sorted(members, key=lambda d: d.id)[0]
            raise CatalogError(f"{first.path}: variant_group {group!r} has {len(preferred)} devices with "
                               f"preferred_variant: true ({', '.join(preferred) or 'none'}): expected exactly one "
                               f"among {', '.join(sorted(d.id for d in members))}")


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
        path = user_path(folder)
        if not path.is_dir():
            raise CatalogError(f"catalog folder {str(folder)!r} " + ("is not a folder: expected a folder of device "
                                                                     "and offer files" if path.exists() else
                                                                     "does not exist"))
        folders.append(path)
    return _load(tuple(str(f) for f in folders))
