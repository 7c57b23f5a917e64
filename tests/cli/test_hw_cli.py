import json

import pytest

from sizeup.cli.main import main


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_hw_show_json_fields(capsys):
    data = run_json(capsys, "hw", "show", "4090")
    assert data["id"] == "rtx-4090"
    for key in ("name", "memory_bytes", "usable_memory_bytes", "memory_bandwidth_bytes_per_s", "peak_flops_per_s",
                "interconnect_bytes_per_s", "tdp_w"):
        assert key in data
    assert data["peak_flops_per_s"]["fp16"] == pytest.approx(165.2e12)
    assert data["usable_memory_bytes"] < data["memory_bytes"]


def test_hw_list_and_offers(capsys):
    devices = run_json(capsys, "hw", "list")["devices"]
    assert len(devices) >= 45
    offers = run_json(capsys, "hw", "offers", "--gpu", "h100")["offers"]
    assert offers and all(o["gpu"] == "h100-sxm-80gb" and o["price_date"] for o in offers)
    assert main(["hw", "offers"]) == 0
    assert "price date" in capsys.readouterr().out


def test_hw_local_reports_this_cpu(capsys):
    data = run_json(capsys, "hw", "local")
    assert data["cpu"]["logical_cores"] >= 1 and data["cpu"]["model"]


def test_unknown_device_is_one_line(capsys):
    assert main(["hw", "show", "rtx 4099"]) == 1
    err = capsys.readouterr().err
    assert "unknown device 'rtx 4099'; closest: rtx-4090" in err and err.count("\n") == 1


def test_bad_user_catalog_file_is_one_line(tmp_path, capsys):
    (tmp_path / "x.yaml").write_text("id: x\nname: X\nvendor: v\nkind: gpu\nmemory_gib: 8\n"
                                     "memory_bandwidth_gb_per_s: -1\nsource: s\nretrieved: 2026-01-01\n")
    assert main(["hw", "list", "--catalog", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "x.yaml: field 'memory_bandwidth_gb_per_s' = -1: expected a positive number" in err


def test_roofline_compares_devices(capsys, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    plot = tmp_path / "roof.png"
    data = run_json(capsys, "roofline", "sizeup.examples.zoo:c2f", "--input", "1x64x64x64", "--device", "a10,h100",
                    "--plot", str(plot))
    assert [d["device"] for d in data["devices"]] == ["a10", "h100-sxm-80gb"]
    a10, h100 = data["devices"]
    assert a10["time_s"]["low"] <= a10["time_s"]["typical"] <= a10["time_s"]["high"]
    assert h100["time_s"]["typical"] < a10["time_s"]["typical"]
    assert {op["bound"] for op in a10["ops"]} <= {"compute", "memory", "overhead", "free"}
    assert plot.stat().st_size > 10_000


def test_roofline_table(capsys):
    pytest.importorskip("torch")
    assert main(["roofline", "sizeup.examples.zoo:c2f", "--input", "1x64x64x64", "--device", "l4", "--by", "kind"]) == 0
    out = capsys.readouterr().out
    assert "conv" in out and "ridge points" in out


def test_roofline_unknown_device(capsys):
    assert main(["roofline", "sizeup.examples.zoo:c2f", "--input", "1x64x64x64", "--device", "nope-9000"]) == 1
    assert "unknown device 'nope-9000'" in capsys.readouterr().err
