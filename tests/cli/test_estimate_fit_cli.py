"""`estimate`'s fit verdict: three-way from the memory range (fits / may not fit / does not fit), and across the
memory sizes the catalog lists for a device named without one (tests/validation/rows_check_1205.yaml:
chk-llmfit1008-rtx3080-qwen3-8b-llamacpp-q8_0, the M4's memory_options)."""

import json

from sizeup.cli.main import main

QWEN_3080 = ["qwen3-8b", "--engine", "llama.cpp", "--quant", "q8_0", "--batch", "1", "--prompt", "5000",
             "--output", "300"]  # typical 8.9 GiB of 9.56 usable, the high end above it


def _json(capsys, argv, code=0):
    assert main(["estimate", *argv, "--json"]) == code
    return json.loads(capsys.readouterr().out)


def test_typical_fits_high_end_does_not(capsys):
    argv = [*QWEN_3080, "--device", "rtx-3080-10gb"]
    assert main(["estimate", *argv]) == 0
    out = capsys.readouterr().out
    assert "FITS at the typical figure, but MAY NOT FIT: the high end of the memory range" in out
    data = _json(capsys, argv)
    assert data["fits"] is True and data["fit"] == "may not fit"
    assert data["memory"]["total_range_bytes"]["high"] > data["memory"]["usable_bytes"]
    assert "memory_variants" not in data  # 10gb names the size


def test_whole_range_fits(capsys):
    # llama.cpp has no memory row of its own: its range is never narrower than the kind's default (x0.73 - x1.48),
    # so the 12 GB card holds the whole range of q6_k (~6.9 GiB typical), not of q8_0's ~8.5
    argv = [*QWEN_3080, "--device", "rtx-3080-12gb"]
    data = _json(capsys, [*argv[:4], "q6_k", *argv[5:]])
    assert data["fit"] == "fits" and data["fit_note"] is None
    assert data["memory"]["total_range_bytes"]["high"] <= data["memory"]["usable_bytes"]


def test_unnamed_memory_size_is_stated_and_compared(capsys):
    argv = ["gpt-oss-20b", "--device", "apple-m4", "--engine", "llama.cpp"]  # all layers on the GPU
    assert main(["estimate", *argv]) == 0
    out = capsys.readouterr().out
    assert "assumption: apple-m4: the 32 GB model assumed (no memory size named)" in out
    assert "apple-m4-16gb (16 GB), apple-m4-24gb (24 GB)" in out
    line = next(x for x in out.splitlines() if x.startswith("by memory size"))
    assert line.startswith("by memory size (32 GB assumed): fits on the ") and "16 GB model" in line
    data = _json(capsys, argv)
    sizes = {v["device"]: v["fit"] for v in data["memory_variants"]}
    assert sizes["apple-m4"] == data["fit"] == "fits"
    assert sizes["apple-m4-16gb"] != "fits"
    assert data["memory_variants_line"] in line


def test_named_memory_size_is_not_compared(capsys):
    out_args = ["gpt-oss-20b", "--device", "m4 16gb", "--engine", "llama.cpp"]
    main(["estimate", *out_args, "--json"])  # 16 GB: above macOS's GPU wired limit
    data = json.loads(capsys.readouterr().out)
    assert data["device"]["id"] == "apple-m4-16gb" and "memory_variants" not in data
    assert data["fit"] != "fits"
    assert not any("model assumed" in a for a in data["assumptions"])


def test_group_variants_keep_the_resolver_note(capsys):
    data = _json(capsys, [*QWEN_3080, "--device", "rtx-3080"])
    assert {v["device"] for v in data["memory_variants"]} == {"rtx-3080-10gb", "rtx-3080-12gb"}
    assert sum("rtx-3080" in a and "variant" in a for a in data["assumptions"]) == 1
