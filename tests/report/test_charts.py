"""The SVG chart module: well-formed, self-contained SVG; every option labelled, the choice marked, the
SLA line at its value; the memory stack's geometry adds up; every example's HTML sheet carries at least
three inline charts without flags; `--plots` writes them as files."""

import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from sizeup.cli.main import main
from sizeup.hardware.catalog import load_catalog
from sizeup.plan.recommend import plan_scenario
from sizeup.plan.scenario import load_scenario
from sizeup.report.charts import (Point, bars_svg, line_svg, memory_stack_svg, plan_charts, roofline_svg,
                                  scatter_svg)
from sizeup.report.charts.files import NO_PNG, png_converter
from sizeup.report.plots import plot_plan

NS = "{http://www.w3.org/2000/svg}"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GIB = 2**30


def parse(svg: str) -> ElementTree.Element:
    root = ElementTree.fromstring(svg)  # raises on malformed XML
    assert root.tag == f"{NS}svg"
    return root


def texts(root) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def test_scatter_labels_every_option_marks_the_choice_and_draws_the_sla():
    points = [Point("1x l4 awq-int4 vllm", 480.0, 650.0, "chosen"), Point("1x l4 fp8 vllm", 230.0, 975.0),
              Point("1x l40s bf16 vllm", 110.0, 1150.0), Point("1x t4 q4 <odd> & co", 1700.0, 300.0, "rejected")]
    root = parse(scatter_svg(points, "TTFT p95 (ms)", "monthly cost (USD)", "cost", sla=(1500.0, "SLA TTFT p95 1500 ms")))
    labels = texts(root)
    for p in points:
        assert any(p.label in t for t in labels), p.label  # escaped on the way in, read back intact
    assert "1x l4 awq-int4 vllm (chosen)" in labels
    chosen = [c for c in root.iter(f"{NS}circle") if c.get("class") == "chosen"]
    assert len(chosen) == 1
    sla = [line for line in root.iter(f"{NS}line") if line.get("class") == "sla"]
    assert len(sla) == 1 and float(sla[0].get("data-value")) == 1500.0
    assert sla[0].get("x1") == sla[0].get("x2")  # vertical, at x = 1500 ms
    assert "TTFT p95 (ms)" in labels and "monthly cost (USD)" in labels
    # the chosen point sits left of the SLA line (480 ms < 1500 ms) and below the cheaper-looking option
    assert float(chosen[0].get("cx")) < float(sla[0].get("x1"))


def test_scatter_labels_do_not_overlap():
    points = [Point(f"option {i}", 100.0 + i, 500.0 + i, "chosen" if i == 0 else "option") for i in range(5)]
    root = parse(scatter_svg(points, "x (ms)", "y (USD)", "t"))
    ys = sorted(float(t.get("y")) for t in root.iter(f"{NS}text") if t.get("class") == "point-label")
    assert len(ys) == 5 and all(b - a >= 12 for a, b in zip(ys, ys[1:]))


def test_memory_stack_parts_sum_to_the_total_geometrically():
    parts = {"weights": 5.33 * GIB, "KV cache": 13.64 * GIB, "activations": 0.90 * GIB, "overhead": 0.81 * GIB}
    usable = 22.0 * GIB
    root = parse(memory_stack_svg(parts, usable, "memory"))
    segments = [r for r in root.iter(f"{NS}rect") if r.get("class") == "segment"]
    assert [s.get("data-part") for s in segments] == list(parts)
    widths = [float(s.get("width")) for s in segments]
    scale = widths[0] / parts["weights"]  # pixels per byte
    for s, w in zip(segments, widths):
        assert w == pytest.approx(float(s.get("data-bytes")) * scale, rel=1e-3)
    for a, b in zip(segments, segments[1:]):  # stacked: each starts where the previous ends
        assert float(b.get("x")) == pytest.approx(float(a.get("x")) + float(a.get("width")), abs=2e-3)
    x0 = float(segments[0].get("x"))
    assert sum(widths) == pytest.approx(sum(parts.values()) * scale, rel=1e-3)
    usable_line = next(line for line in root.iter(f"{NS}line") if line.get("class") == "usable")
    assert float(usable_line.get("x1")) - x0 == pytest.approx(usable * scale, rel=1e-3)
    assert any("needed 20.7 GiB" in t for t in texts(root)) and any("usable 22.0 GiB" in t for t in texts(root))
    assert "memory per GPU (GiB)" in texts(root)


def test_line_marks_the_chosen_batch_and_the_sla():
    pts = [(1.0, 20.0), (4.0, 22.0), (16.0, 31.0), (23.0, 36.0)]
    root = parse(line_svg({"TPOT": pts}, "concurrent sequences", "TPOT (ms per token)", "t",
                          sla=(60.0, "SLA tpot p95 60 ms"), mark=(23.0, 36.0, "chosen batch 23"), log_x=True))
    sla = next(line for line in root.iter(f"{NS}line") if line.get("class") == "sla")
    assert float(sla.get("data-value")) == 60.0 and sla.get("y1") == sla.get("y2")
    assert float(sla.get("y1")) < min(float(c.get("cy")) for c in root.iter(f"{NS}circle"))  # above every point
    assert "chosen batch 23" in texts(root)


def test_roofline_has_log_axes_one_roof_per_peak_and_every_op():
    ops = [("matmul", 100.0, 5e13), ("elementwise", 0.2, 5e10), ("attention", 4.0, 1e12)]
    peaks = {"tensor bf16": 121e12, "vector fp32": 30e12}
    root = parse(roofline_svg(ops, 300e9, peaks, "roofline"))
    assert len([c for c in root.iter(f"{NS}circle") if c.get("class") == "op"]) == 3
    roofs = [line for line in root.iter(f"{NS}line") if line.get("class") == "roof"]
    assert sorted(float(r.get("data-flops")) for r in roofs) == sorted(peaks.values())
    ticks = [t for t in texts(root) if re.fullmatch(r"1e\d+", t)]
    assert len(ticks) >= 3  # decades on the FLOP/s axis
    assert "arithmetic intensity (FLOP / byte)" in texts(root) and "attained FLOP/s" in texts(root)


def test_bars_mark_the_used_basis_and_the_budget():
    root = parse(bars_svg({"on-demand": 1032.0, "reserved 1 year": 650.0}, "monthly cost (USD)", "t",
                          mark="reserved 1 year", line=(1500.0, "budget $1,500/month")))
    bars = {b.get("data-label"): b for b in root.iter(f"{NS}rect") if b.get("class") == "bar"}
    assert float(bars["on-demand"].get("width")) / float(bars["reserved 1 year"].get("width")) == \
        pytest.approx(1032 / 650, rel=1e-3)
    assert bars["reserved 1 year"].get("fill") != bars["on-demand"].get("fill")
    assert any(line.get("class") == "limit" and float(line.get("data-value")) == 1500.0
               for line in root.iter(f"{NS}line"))


@pytest.fixture(scope="module")
def team_api():
    return plan_scenario(load_scenario(EXAMPLES / "team-api-200-users.yaml"), load_catalog(include_user=False))


def test_plan_charts_of_a_serving_plan(team_api):
    charts = {c.key: c for c in plan_charts(team_api)}
    assert {"cost_vs_latency", "memory", "latency_vs_batch", "roofline"} <= set(charts)
    cost = parse(charts["cost_vs_latency"].svg)
    labels = texts(cost)
    for c in team_api.ranked:
        assert any(c.label.split(" (")[0] in t for t in labels), c.label
    assert f"{team_api.chosen.label.split(' (')[0]} (chosen)" in labels
    priced = [r for r in team_api.rejected if "$" in r.reason]  # rejected on cost: named with their cost
    assert priced and any(t.startswith(f"{priced[0].family}: ") and "$" in t for t in labels)
    sla = next(line for line in cost.iter(f"{NS}line") if line.get("class") == "sla")
    assert float(sla.get("data-value")) == pytest.approx(team_api.scenario.sla.targets["ttft_p95"] * 1e3)
    assert "TTFT p95 (ms)" in labels and "monthly cost (USD)" in labels
    memory = parse(charts["memory"].svg)
    parts = {s.get("data-part"): float(s.get("data-bytes")) for s in memory.iter(f"{NS}rect")
             if s.get("class") == "segment"}
    assert list(parts) == ["weights", "KV cache", "activations", "overhead"]
    assert sum(parts.values()) == pytest.approx(team_api.chosen.memory_bytes, abs=4)
    batch = parse(charts["latency_vs_batch"].svg)
    assert f"chosen batch {team_api.chosen.max_batch}" in texts(batch)
    assert any(c.get("class") == "op" for c in parse(charts["roofline"].svg).iter(f"{NS}circle"))


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_every_example_html_holds_three_charts_without_flags(name, tmp_path):
    if name.startswith("vision"):
        pytest.importorskip("torch")
    out = tmp_path / "sheet.html"
    main(["plan", str(EXAMPLES / f"{name}.yaml"), "--format", "html", "--out", str(out)])
    page = out.read_text()
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    charts = [parse(s) for s in svgs if 'class="chart"' in s]
    assert len(charts) >= 3, [c.get("data-chart") for c in charts]
    assert "roofline not drawn" not in page
    assert "<h2>Inputs</h2>" not in page or page.index("<h2>Charts</h2>") < page.index("<h2>Inputs</h2>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page) and "<script" not in page


def test_plots_folder_gets_every_chart(team_api, tmp_path):
    paths, note = plot_plan(team_api, str(tmp_path / "plots"))
    assert set(paths) == {c.key for c in plan_charts(team_api)}
    for key in paths:
        parse((tmp_path / "plots" / f"{key}.svg").read_text())
    if png_converter() is None:
        assert note == NO_PNG and all(p.endswith(".svg") for p in paths.values())
    else:
        assert note is None and all(Path(p).read_bytes()[:4] == b"\x89PNG" for p in paths.values())


def test_the_chart_drawing_imports_nothing_heavy():
    code = ("import sys, sizeup.report.charts, sizeup.report.plots; "
            "heavy = {'numpy', 'matplotlib', 'torch', 'cairosvg'} & set(sys.modules); assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)
