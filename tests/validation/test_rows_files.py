"""The issue-28 research rows (tests/validation/rows_*.yaml, described in ROWS_README.md) are well-formed data:
every file parses, every row is sourced, dated, labelled tuned/check and carries the command line a user would type.
No pricing here: the engines these rows describe (mlx, sglang, exllamav2, torch-compile, mlc, ollama, ...) do not
exist yet; the helpers that build them price the rows."""

import re
from collections import defaultdict
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
# Traced-model rows (`sizeup roofline`, priced by benchmarks/validate_vision.py) have their own test (test_vision_rows.py).
ROOFLINE_FILES = {"rows_vision_check.yaml"}
FILES = sorted(p for p in HERE.glob("rows_*.yaml") if p.name not in ROOFLINE_FILES)
REQUIRED = ("id", "role", "model", "device", "gpus", "engine", "quant", "metric", "value", "conversion", "stated",
            "argv", "source", "source_key", "retrieved")
METRICS = {"decode_tokens_per_s", "total_decode_tokens_per_s", "prefill_tokens_per_s", "peak_memory_bytes", "ttft_s",
           "tpot_s", "e2e_latency_s", "output_tokens_per_s_at_load", "input_tokens_per_s_at_load",
           "total_tokens_per_s_at_load", "requests_per_s"}
# The one file whose tuned and check rows share a source (a single source exists for the Arc Pro B60).
SHARED_SOURCE_FILES = {"rows_new_devices.yaml"}
# Held-out sets: every row is check (nothing was fitted to them), so they have no tuned rows by design.
CHECK_ONLY_FILES = {"rows_check_1205.yaml", "rows_local_1205b.yaml", "rows_rocm_vllm.yaml", "rows_mlperf50.yaml",
                    "rows_check_1206_local.yaml", "rows_check_1206_serve.yaml", "rows_check_1206_audit3.yaml",
                    "rows_check_1206_devices.yaml"}


def _rows():
    """Each file's rows in the gathering format (argv, source_key, source); a file its engine's helper converted to
    the runner's (command, source, reference: docs/validation.md) is read back into it."""
    out = {}
    for path in FILES:
        rows = yaml.safe_load(path.read_text())
        out[path.name] = [{**r, "argv": r["command"], "source_key": r["source"], "source": r["reference"]}
                          if "command" in r else r for r in rows]
    return out


def test_every_file_parses_to_rows():
    rows = _rows()
    assert len(rows) >= 9, sorted(rows)
    assert all(isinstance(r, list) and r for r in rows.values())
    assert sum(len(r) for r in rows.values()) >= 150


def test_every_row_is_complete_and_sourced():
    for name, rows in _rows().items():
        for r in rows:
            missing = [k for k in REQUIRED if r.get(k) in (None, "")]
            assert not missing, (name, r.get("id"), missing)
            assert r["role"] in {"tuned", "check"}, (name, r["id"])
            assert "2026-12-04" <= r["retrieved"] <= "2026-12-06", (name, r["id"])  # gathered, or added by a helper
            assert r["metric"] in METRICS, (name, r["id"], r["metric"])
            assert isinstance(r["value"], (int, float)) and not isinstance(r["value"], bool) and r["value"] > 0
            assert isinstance(r["gpus"], int) and r["gpus"] >= 1
            assert re.match(r"(github\.com/|https?://)", r["source"]), (name, r["id"])
            assert isinstance(r.get("unknown", []), list)


def test_argv_is_the_command_the_row_states():
    """The command line names the row's model, device, engine and format (flags of today or of issue 28)."""
    for name, rows in _rows().items():
        for r in rows:
            argv = r["argv"].split()
            config = argv[2].startswith("tests/validation/configs/") and r.get("model_preset") == "missing"
            assert argv[:2] == ["sizeup", "estimate"] and (argv[2] == r["model"] or config), (name, r["id"])
            flags = dict(zip(argv[3::2], argv[4::2]))
            assert flags["--device"] == r["device"], (name, r["id"])
            assert flags["--engine"].split("@")[0] == r["engine"], (name, r["id"])
            assert flags["--quant"] == r["quant"], (name, r["id"])
            # --replicas copies of --gpus GPUs each: the row's GPUs in all
            assert int(flags.get("--gpus", 1)) * int(flags.get("--replicas", 1)) == r["gpus"], (name, r["id"])


def test_devices_resolve_and_presets_exist():
    """Every device name resolves in today's catalog (variants included: memory sizes, Jetson power modes), and a
    model not marked `model_preset: missing` is a shipped preset; a device marked `device_preset: missing` (an
    unanswerable audit row: hardware sizeup lacks) must not resolve."""
    import pytest

    from sizeup.errors import SizeupError
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.resolve import resolve_device

    catalog = load_catalog(include_user=False)
    models = HERE.parents[1] / "src" / "sizeup" / "data" / "models"
    for name, rows in _rows().items():
        for r in rows:
            if r.get("device_preset") == "missing":
                with pytest.raises(SizeupError):
                    resolve_device(catalog, r["device"])
            else:
                resolve_device(catalog, r["device"])
            assert (r.get("model_preset") == "missing") != (models / f"{r['model']}.json").is_file(), (name, r["id"])


def test_ids_are_unique_across_files():
    seen = {}
    for name, rows in _rows().items():
        for r in rows:
            assert r["id"] not in seen, (r["id"], name, seen.get(r["id"]))
            seen[r["id"]] = name


def test_tuned_and_check_rows_come_from_different_sources():
    """Leave-one-source-out stays meaningful: a source is tuned everywhere or check everywhere, and each file has
    both kinds, tuned rows in the minority or near half."""
    roles = defaultdict(set)
    for name, rows in _rows().items():
        kinds = {r["role"] for r in rows}
        assert kinds == ({"check"} if name in CHECK_ONLY_FILES else {"tuned", "check"}), name
        assert sum(r["role"] == "tuned" for r in rows) <= 0.5 * len(rows), name
        for r in rows:
            if name not in SHARED_SOURCE_FILES:
                roles[r["source_key"]].add(r["role"])
    shared = {key for key, kinds in roles.items() if len(kinds) > 1}
    assert not shared, shared
