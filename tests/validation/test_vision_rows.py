"""The traced-model vision rows of rows_vision_check.yaml are well-formed `sizeup roofline` commands (priced by
benchmarks/validate_vision.py), and the Ultralytics architectures they name match the docs' parameter counts."""

from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
ROWS = yaml.safe_load((HERE / "rows_vision_check.yaml").read_text())

# (module, factory, parameters in millions as the Ultralytics docs print them)
PARAMS = [("yolo", "yolov8n", 3.2), ("yolo", "yolov8x", 68.2), ("yolo", "yolov8n_cls", 2.7), ("yolo", "yolov8x_cls", 57.4),
          ("yolo11", "yolo11n", 2.6), ("yolo11", "yolo11m", 20.1), ("yolo11", "yolo11x", 56.9),
          ("yolo11", "yolo11n_cls", 2.8), ("yolo11", "yolo11x_cls", 29.6), ("yolo11", "yolo11n_pose", 2.9),
          ("yolo11", "yolo11x_pose", 58.8)]


def test_every_row_is_a_sourced_check_roofline_command():
    from sizeup.hardware.catalog import load_catalog
    from sizeup.hardware.resolve import resolve_device
    from sizeup.engines.runtimes import get_runtime

    catalog = load_catalog(include_user=False)
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids)) and len(ROWS) >= 20
    for r in ROWS:
        assert r["role"] == "check" and r["metric"] == "images_per_s" and r["value"] > 0, r["id"]
        assert r["reference"] and r["source"] and r["retrieved"] == "2026-12-05" and r["stated"], r["id"]
        argv = r["command"].split()
        assert argv[:2] == ["sizeup", "roofline"] and argv[2].startswith("sizeup.examples."), r["id"]
        flags = dict(zip(argv[3::2], argv[4::2]))
        assert flags["--device"] == r["device"] and flags["--runtime"] == r["runtime"], r["id"]
        assert flags["--input"].startswith("1x3x"), r["id"]  # every source timed batch 1
        resolve_device(catalog, r["device"])
        get_runtime(r["runtime"])


@pytest.mark.parametrize("module, factory, millions", PARAMS)
def test_ultralytics_models_have_the_documented_parameter_count(module, factory, millions):
    pytest.importorskip("torch")
    import importlib

    model = getattr(importlib.import_module(f"sizeup.examples.{module}"), factory)()
    # the docs count the deployed model, each BatchNorm folded into its conv (2 parameters per channel become 1)
    assert sum(p.numel() for p in model.parameters()) / 1e6 == pytest.approx(millions, abs=0.1)


# ultralytics/cfg/models/11/yolo11.yaml 'scales' comments (commit 0a2ae50b3d43, read 2026-12-05): the unfused model
YOLO11_SUMMARY = {"n": 2_624_080, "s": 9_458_752, "m": 20_114_688, "l": 25_372_160, "x": 56_966_176}


@pytest.mark.parametrize("scale", sorted(YOLO11_SUMMARY))
def test_yolo11_matches_the_yaml_summary_exactly(scale):
    pytest.importorskip("torch")
    from sizeup.examples.yolo11 import YOLO11

    assert sum(p.numel() for p in YOLO11(scale).parameters()) == YOLO11_SUMMARY[scale]
