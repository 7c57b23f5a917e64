"""Hostile files under --catalog DIR (issue 14): refused in one line before libyaml sees them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sizeup.errors import CatalogError
from sizeup.hardware.catalog import load_catalog
from sizeup.yaml_depth import MAX_YAML_NESTING, yaml_nesting_bound


def test_deep_nesting_is_refused_and_does_not_crash_the_process(tmp_path):
    """100,000 '[' overflowed libyaml's C stack: a segfault (exit -11), not an error line."""
    (tmp_path / "deep.yaml").write_text("[" * 100_000)
    proc = subprocess.run([sys.executable, "-m", "sizeup", "hw", "list", "--catalog", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "SIZEUP_NO_CACHE": "1"})
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "nested up to 100,002 levels" in proc.stderr


@pytest.mark.parametrize("payload,match", [(b"id: x\n\xff\xfe", "not UTF-8"), (b"{a: " * 200 + b"1", "nested")])
def test_bad_bytes_are_a_catalog_error(tmp_path, payload, match):
    (tmp_path / "bad.yaml").write_bytes(payload)
    with pytest.raises(CatalogError, match=match):
        load_catalog([tmp_path], include_user=False)


def test_the_bound_is_never_below_the_real_depth():
    for depth in (1, 5, 30, MAX_YAML_NESTING):
        assert yaml_nesting_bound("[" * depth + "]" * depth) >= depth
        block = "".join("  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "v"
        assert yaml_nesting_bound(block) >= depth


def _device_file(folder, **values):
    import yaml

    device = {"id": "mydev", "name": "My Device", "vendor": "nvidia", "kind": "gpu", "memory_gib": 24,
              "memory_bandwidth_gb_per_s": 1000, "dense_tflops": {"bf16": 100}, "source": "a test",
              "retrieved": "2026-12-04", **values}
    (folder / "mydev.yaml").write_text(yaml.safe_dump(device))


def test_catalog_numbers_up_to_the_bound_are_read_and_past_it_refused(tmp_path):
    """1e9 in the file's unit is far above any part and far below an overflow to infinity (hardware/schema.py)."""
    from sizeup.hardware.schema import MAX_DATA_NUMBER

    at, past = tmp_path / "at", tmp_path / "past"
    at.mkdir(), past.mkdir()
    _device_file(at, memory_bandwidth_gb_per_s=MAX_DATA_NUMBER)
    device = load_catalog([at], include_user=False).devices["mydev"]
    assert device.memory_bandwidth_bytes_per_s == MAX_DATA_NUMBER * 1e9
    _device_file(past, memory_bandwidth_gb_per_s=MAX_DATA_NUMBER * 1.5)
    with pytest.raises(CatalogError, match="field 'memory_bandwidth_gb_per_s' = 1500000000.0: expected a finite "
                                           "number of at most 1e\\+09"):
        load_catalog([past], include_user=False)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_an_architectures_file_that_is_not_a_file_is_refused_not_skipped(tmp_path):
    _device_file(tmp_path)
    os.mkfifo(tmp_path / "architectures.yaml")
    with pytest.raises(CatalogError, match=r"architectures.yaml' is not a regular file \(a FIFO\)"):
        load_catalog([tmp_path], include_user=False)


@pytest.mark.parametrize("field, value", [("memory_bandwidth_gb_per_s", 1e-300), ("dense_tflops", {"bf16": 1e-300}),
                                          ("tdp_w", 1e-9)])
def test_a_positive_number_near_zero_is_refused(tmp_path, field, value):
    """1e-300 GB/s is zero in all but name: a training step priced on it lasted 1e297 days (issue 27 red team)."""
    _device_file(tmp_path, **{field: value})
    with pytest.raises(CatalogError, match="expected a positive number of at least 1e-06 in the field's unit"):
        load_catalog([tmp_path], include_user=False)
