import json
from xml.etree import ElementTree

import pytest

from sizeup.cli.main import main
from sizeup.report.charts.files import png_converter


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
    plot = tmp_path / "roof.png"
    data = run_json(capsys, "roofline", "sizeup.examples.zoo:c2f", "--input", "1x64x64x64", "--device", "a10,h100",
                    "--plot", str(plot))
    assert [d["device"] for d in data["devices"]] == ["a10", "h100-sxm-80gb"]
    a10, h100 = data["devices"]
    assert a10["time_s"]["low"] <= a10["time_s"]["typical"] <= a10["time_s"]["high"]
    assert h100["time_s"]["typical"] < a10["time_s"]["typical"]
    assert {op["bound"] for op in a10["ops"]} <= {"compute", "memory", "overhead", "free"}
    svg = ElementTree.parse(tmp_path / "roof.svg").getroot()  # the chart is always written as SVG
    assert svg.get("data-chart") == "roofline" and len(list(svg.iter("{http://www.w3.org/2000/svg}circle"))) > 0
    if png_converter() is not None:  # and as PNG where a converter is installed
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert not plot.exists()


def test_roofline_table(capsys):
    pytest.importorskip("torch")
    assert main(["roofline", "sizeup.examples.zoo:c2f", "--input", "1x64x64x64", "--device", "l4", "--by", "kind"]) == 0
    out = capsys.readouterr().out
    assert "conv" in out and "ridge points" in out


def test_roofline_unknown_device(capsys):
    assert main(["roofline", "sizeup.examples.zoo:c2f", "--input", "1x64x64x64", "--device", "nope-9000"]) == 1
    assert "unknown device 'nope-9000'" in capsys.readouterr().err


def test_hw_show_marks_derived_peaks(capsys):
    data = run_json(capsys, "hw", "show", "Apple M3 Max")
    assert data["id"] == "apple-m3-max" and data["derived_peaks"]["vector.fp32"].startswith("derived:")
    assert main(["hw", "show", "rtx 3080 ti"]) == 0
    out = capsys.readouterr().out
    assert "68.4*" in out and "* tensor.fp16: derived: 80 SM x 1,670 MHz boost x 1024" in out


def test_hw_local_maps_vendor_tool_names(monkeypatch, capsys):
    from sizeup.hardware import local

    monkeypatch.setattr(local, "_cpuinfo", lambda: ("Intel(R) Xeon(R) Platinum 8480+", ("avx512f",), 56))
    monkeypatch.setattr(local, "_find_gpus", lambda: ([("NVIDIA GeForce RTX 4090", 24 * 2**30),
                                                       ("NVIDIA A100 80GB PCIe", 80 * 2**30),
                                                       ("NVIDIA Zeta 9000", None)], "nvidia-smi", []))
    data = run_json(capsys, "hw", "local")
    assert data["cpu"]["catalog_id"] == "xeon-8480-2s"
    assert [g["catalog_id"] for g in data["gpus"]] == ["rtx-4090", "a100-pcie-80gb", None]
    assert any("Zeta 9000" in n for n in data["notes"])


def test_estimate_with_unknown_compute_says_unknown(capsys, tmp_path):
    (tmp_path / "zz-mystery.yaml").write_text(
        "id: zz-mystery\nname: Mystery Card\nvendor: test\nkind: gpu\nmemory_gib: 24\nmemory_type: GDDR6\n"
        "memory_bandwidth_gb_per_s: 900\nsource: test\nretrieved: 2026-12-03\n")
    argv = ["estimate", "llama-3-8b", "--device", "zz-mystery", "--engine", "llama.cpp", "--quant", "q4_k_m",
            "--catalog", str(tmp_path)]
    data = run_json(capsys, *argv)
    assert data["prefill"]["tokens_per_s"] is None and data["decode"]["tokens_per_s"] is None
    assert main(argv) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "tokens/s unknown" in text and "inf" not in text.split("tokens/s unknown")[0].split("\n")[-1]


def _variant(folder, id_, memory, preferred=False, aliases=()):
    (folder / f"{id_}.yaml").write_text("\n".join([
        f"id: {id_}", f"name: NVIDIA GeForce Zeta 4060 Ti {memory}GB", "vendor: nvidia", "kind: gpu",
        f"memory_gib: {memory}", "compute_units: 34",
        "memory_bandwidth_gb_per_s: 288", "memory_type: GDDR6", "architecture: ada", "boost_clock_mhz: 2535",
        "variant_group: zeta-4060-ti", f"preferred_variant: {'true' if preferred else 'false'}",
        "aliases: [" + ", ".join(repr(a) for a in aliases) + "]", "source: test", "retrieved: 2026-12-03"]) + "\n")


def test_variant_note_reaches_estimate_and_hw_show(tmp_path, capsys):
    _variant(tmp_path, "zeta-4060-ti-16gb", 16, preferred=True, aliases=["zeta 4060 ti", "zeta 4060 ti 16gb"])
    _variant(tmp_path, "zeta-4060-ti-8gb", 8, aliases=["zeta 4060 ti 8gb"])
    shown = run_json(capsys, "hw", "show", "Zeta 4060 Ti", "--catalog", str(tmp_path))
    assert shown["id"] == "zeta-4060-ti-16gb" and "zeta-4060-ti-8gb" in shown["resolved_as"]
    assert "'zeta 4060 ti 8gb'" in shown["resolved_as"]
    assert run_json(capsys, "hw", "show", "Zeta 4060 Ti 8GB", "--catalog", str(tmp_path))["resolved_as"] is None
    data = run_json(capsys, "estimate", "llama-3-8b", "--device", "Zeta 4060 Ti", "--catalog", str(tmp_path))
    assert any("zeta-4060-ti-8gb" in a and "resolved to zeta-4060-ti-16gb" in a for a in data["assumptions"])
    assert data["prefill"]["tokens_per_s"]["typical"] > 0


def test_an_unknown_provider_is_refused_naming_the_known_ones(capsys):
    """A mistyped --provider listed nothing with exit 0; now one line naming the catalog's providers."""
    assert main(["hw", "offers", "--provider", "vastia"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'vastia'" in err and "vastai" in err and "aws" in err


def test_hw_show_power_mode_variant_prints_clocks_and_thermal_trips(capsys):
    assert main(["hw", "show", "orin nano 15w"]) == 0
    out = capsys.readouterr().out
    assert "variant of: jetson-orin-nano-8gb" in out
    assert "power mode 15W: GPU max 612 MHz, 8 GPU units, 6 CPU cores online" in out and "EMC 2,133 MHz" in out
    assert "sw-throttle 99 C" in out
    data = run_json(capsys, "hw", "show", "agx orin")
    assert [v["id"] for v in data["variants"]] == ["jetson-agx-orin-64gb-15w", "jetson-agx-orin-64gb-30w",
                                                   "jetson-agx-orin-64gb-50w"]
    assert data["power_mode"] == "MAXN" and data["thermal"]["trips"][0]["temperature_c"] == 99


def test_hw_show_prints_prices_and_wall_power(capsys):
    assert main(["hw", "show", "4090"]) == 0
    out = capsys.readouterr().out
    assert "buy: GeForce RTX 4090 24GB graphics card: MSRP $1,599 (2022-10-12); street $2,270 (2026-07-12" in out
    assert "wall power 633 W: derived: (1 x 450 W TDP + 120 W host) / 0.9 PSU efficiency" in out
    (item,) = run_json(capsys, "hw", "show", "4090")["purchases"]
    assert item["street_where"] and item["source"] and item["wall_power"]["watts"] == pytest.approx(570 / 0.9)
    data = run_json(capsys, "hw", "show", "M4 16GB")
    assert data["id"] == "apple-m4-16gb" and data["purchases"][0]["msrp_usd"] == 599
    assert data["purchases"][0]["wall_power"]["watts"] is None


def test_hw_list_leaves_variants_to_a_flag(capsys):
    listed = run_json(capsys, "hw", "list")
    ids = {d["id"] for d in listed["devices"]}
    assert "jetson-orin-nano-8gb" in ids and "jetson-orin-nano-8gb-15w" not in ids and listed["variants_hidden"] > 50
    every = run_json(capsys, "hw", "list", "--variants")
    assert "jetson-orin-nano-8gb-15w" in {d["id"] for d in every["devices"]} and every["variants_hidden"] == 0
