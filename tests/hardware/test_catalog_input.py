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
