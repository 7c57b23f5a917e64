"""The compiled catalog cache: keyed by file contents, rebuilt on change, corrupt files ignored."""

import json

import pytest

from sizeup.errors import CatalogError
from sizeup.hardware import catalog as catalog_module, catalog_cache
from sizeup.hardware.catalog import MAX_DATA_FILE_BYTES, load_catalog


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("SIZEUP_CACHE_DIR", str(folder))
    monkeypatch.delenv("SIZEUP_NO_CACHE", raising=False)
    catalog_module._load.cache_clear()
    yield folder
    catalog_module._load.cache_clear()


def _device(folder, bandwidth=100):
    (folder / "zz-dev.yaml").write_text(
        "id: zz-dev\nname: Zed Dev\nvendor: test\nkind: gpu\nmemory_gib: 8\n"
        f"memory_bandwidth_gb_per_s: {bandwidth}\nsource: test\nretrieved: 2026-12-03\n")


def test_cache_round_trips_the_catalog(cache):
    built = load_catalog(include_user=False)
    assert len(list(cache.glob("catalog-*.json"))) == 1
    catalog_module._load.cache_clear()
    cached = load_catalog(include_user=False)
    assert cached.devices == built.devices and cached.offers == built.offers


def test_cache_rebuilds_when_a_catalog_dir_changes(cache, tmp_path):
    user = tmp_path / "mine"
    user.mkdir()
    _device(user, 100)
    assert load_catalog([user], include_user=False).device("zz-dev").memory_bandwidth_bytes_per_s == 100e9
    catalog_module._load.cache_clear()
    _device(user, 2000)  # different size and mtime
    assert load_catalog([user], include_user=False).device("zz-dev").memory_bandwidth_bytes_per_s == 2000e9


def test_corrupt_cache_is_ignored_and_rebuilt(cache):
    load_catalog(include_user=False)
    (path,) = cache.glob("catalog-*.json")
    path.write_text("{not json")
    catalog_module._load.cache_clear()
    assert "rtx-4090" in load_catalog(include_user=False).devices
    assert json.loads(path.read_text().splitlines()[0])["format"] == catalog_cache.FORMAT


def test_cache_can_be_turned_off(cache, monkeypatch):
    monkeypatch.setenv("SIZEUP_NO_CACHE", "1")
    load_catalog(include_user=False)
    assert not cache.exists() or not list(cache.glob("catalog-*.json"))


def test_large_file_is_refused_before_parsing(tmp_path, cache):
    big = tmp_path / "big"
    big.mkdir()
    (big / "huge.yaml").write_text("a: [" + "1, " * (MAX_DATA_FILE_BYTES // 3 + 10) + "1]\n")
    with pytest.raises(CatalogError) as e:
        load_catalog([big], include_user=False)
    assert "huge.yaml" in str(e.value) and "limit" in str(e.value) and "\n" not in str(e.value)


# ---- single data files ----------------------------------------------------------------------------

def test_a_data_file_round_trips_through_its_cache_with_dates(cache, tmp_path):
    import datetime as dt
    import os

    from sizeup.hardware.catalog import read_yaml

    path = tmp_path / "eff.yaml"
    path.write_text("retrieved: 2026-12-03\nrates: {fp16: 0.7, n: 3}\nlist: [a, 1.5, null, true]\n")
    first = read_yaml(path)
    assert first == {"retrieved": dt.date(2026, 12, 3), "rates": {"fp16": 0.7, "n": 3}, "list": ["a", 1.5, None, True]}
    assert list((cache / "data").glob("*.json")), "the parsed file was cached"
    assert read_yaml(path) == first and isinstance(read_yaml(path)["retrieved"], dt.date)
    path.write_text("retrieved: 2026-12-04\n")  # an edit (new size and mtime) is read afresh
    os.utime(path, ns=(1, 1))
    assert read_yaml(path) == {"retrieved": dt.date(2026, 12, 4)}


def test_a_corrupt_data_cache_entry_is_parsed_again(cache, tmp_path):
    from sizeup.hardware.catalog import read_yaml

    path = tmp_path / "eff.yaml"
    path.write_text("a: 1\n")
    read_yaml(path)
    for entry in (cache / "data").glob("*.json"):
        entry.write_text("{not json")
    assert read_yaml(path) == {"a": 1}


def test_an_estimate_with_a_warm_cache_imports_no_yaml(cache):
    """Start-up (issue 15): with the data files cached, the estimate path never imports yaml or the store."""
    import os
    import subprocess
    import sys

    code = ("import sys; from sizeup.cli.main import main; main(['estimate', 'llama-3.1-8b', '--device', 'rtx-4090',"
            " '--json']); print(sorted(m for m in ('yaml', 'sqlite3', 'torch', 'transformers') if m in sys.modules),"
            " file=sys.stderr)")
    env = {**os.environ, "SIZEUP_CACHE_DIR": str(cache)}
    for _ in range(2):  # the first run fills the cache
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"


def test_a_cached_catalog_decodes_only_the_devices_asked_for(cache):
    built = load_catalog(include_user=False)
    catalog_module._load.cache_clear()
    cached = load_catalog(include_user=False)
    assert isinstance(cached.devices, catalog_cache.LazyRecords)
    assert cached.device("rtx-4090") == built.devices["rtx-4090"]
    assert list(cached.devices._made) == ["rtx-4090"], "one device decoded, not the catalog"
    assert list(cached.devices) == list(built.devices) and len(cached.offers) == len(built.offers)
    assert cached.devices.get("no-such-device") is None and "no-such-device" not in cached.devices
    with pytest.raises(KeyError):
        cached.devices["no-such-device"]
    assert dict(cached.devices.items()) == dict(built.devices.items())


def test_a_damaged_record_is_rebuilt_from_the_data_files(cache):
    built = load_catalog(include_user=False)
    (path,) = cache.glob("catalog-*.json")
    head, *lines = path.read_bytes().split(b"\n")
    spans = json.loads(head)["devices"]
    start, end = spans["rtx-4090"]
    body = b"\n".join(lines)
    path.write_bytes(head + b"\n" + body[:start] + b"{" + b"x" * (end - start - 1) + body[end:])  # same length
    catalog_module._load.cache_clear()
    cached = load_catalog(include_user=False)
    assert isinstance(cached.devices, catalog_cache.LazyRecords)
    assert cached.devices["rtx-4090"] == built.devices["rtx-4090"]
    assert cached.devices == built.devices


def test_a_truncated_cache_file_is_ignored(cache):
    load_catalog(include_user=False)
    (path,) = cache.glob("catalog-*.json")
    path.write_bytes(path.read_bytes()[:-10])
    catalog_module._load.cache_clear()
    assert not isinstance(load_catalog(include_user=False).devices, catalog_cache.LazyRecords)


def test_the_key_covers_every_file_the_catalog_reads(tmp_path):
    """The directory entries the key stats are the files `_yaml_files` lists (the ones `_build` parses)."""
    import os

    for sub in ("", "devices", "offers"):
        folder = tmp_path / sub
        folder.mkdir(exist_ok=True)
        for name in ("a.yaml", "b.yml", ".yaml", ".hidden.yaml", "c.txt", "architectures.yaml", "d.yaml.bak"):
            (folder / name).write_text("x: 1\n")
    root = str(tmp_path)
    listed = [str(p) for sub in ("devices", "offers", "") for p in catalog_module._yaml_files(tmp_path / sub)]
    keyed = [os.fspath(p) for p in catalog_module._source_files((root,))]
    assert keyed[0].endswith("data/architectures.yaml") and keyed[-1] == str(tmp_path / "architectures.yaml")
    assert keyed[1:-1] == listed and len(listed) == 9
