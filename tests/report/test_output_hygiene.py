"""Output hygiene (issue 27.2): a name from a file or a user — with terminal escapes, a carriage return that
forges a `sizeup: error:` line, raw HTML, Markdown markup or a leading '=' — comes out inert in every
renderer: text, Markdown, HTML and XLSX (opened with openpyxl: such cells are text, never formulas), and
on the CLI's stdout and stderr whatever printed it."""

import re
import subprocess
import sys

import pytest
import yaml

from sizeup.cli.main import main
from sizeup.plan.sheet import Cell, Section, Sheet
from sizeup.report.html import render_html
from sizeup.report.markdown import render_markdown
from sizeup.report.terminal import render_sheet, render_table

CLEAR = "\x1b[2J\x1b[H"
FORGE = "\rsizeup: error: forged"
NAME = f"=HYPERLINK(\"http://evil\",\"x\") {CLEAR}{FORGE} <script>alert(1)</script> | *x* [l](http://e)"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def hostile_sheet() -> Sheet:
    device = Section(title=f"Hardware {CLEAR}", cells=(
        Cell(key="device", label="device", value=NAME),
        Cell(key="note", label="+cmd|' /C calc'!A0", value=3, note=f"-2+3 {FORGE}"),
        Cell(key="at", label="@SUM(A1:A9)", value="\tTAB", note="\rCR")),
        table_headers=("runner-up", "cost"), table_rows=((NAME, 1.5), ("=1+1", 2)),
        notes=(f"note {NAME}",))
    return Sheet(title=f"Compute requirement sheet: {NAME}", scenario=NAME, meets=False, verdict=f"verdict {NAME}",
                 inputs=(Cell(key="users", label=f"users {NAME}", value=5),), sections=(device,),
                 assumptions=(f"assumes {NAME}",))


def test_terminal_text_has_no_raw_control_character():
    text = render_sheet(hostile_sheet())
    assert not CONTROL.search(text) and "\\x1b[2J" in text and "\\rsizeup: error: forged" in text
    assert not any(line.startswith("sizeup: error:") for line in text.splitlines())
    table = render_table(["name"], [[NAME], ["a\nb"]], title=NAME)
    assert not CONTROL.search(table) and "a\\nb" in table


def test_markdown_escapes_html_and_markup():
    md = render_markdown(hostile_sheet())
    assert not CONTROL.search(md)
    assert not re.search(r"(?<!\\)<script>", md) and "\\<script>" in md  # shown as text, never raw HTML
    assert "[l](http://e)" not in md and "\\[l\\](http://e)" in md  # no live link from a name
    assert "*x*" not in md.replace("\\*x\\*", "")
    rows = [line for line in md.splitlines() if line.startswith("| device |")]
    assert rows and len(re.findall(r"(?<!\\)\|", rows[0])) == 4  # item | value | note: the name's pipe adds none


def test_html_escapes_every_string():
    page = render_html(hostile_sheet())
    assert not CONTROL.search(page)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\\x1b[2J" in page


def test_xlsx_text_cells_are_never_formulas(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    from sizeup.report.xlsx import write_xlsx

    path = tmp_path / "sheet.xlsx"
    write_xlsx(hostile_sheet(), str(path))
    ws = openpyxl.load_workbook(path)["sheet"]
    cells = {c.value: c for row in ws.iter_rows() for c in row if isinstance(c.value, str)}
    assert not any(CONTROL.search(v) for v in cells)
    for start, prefixed in (("=HYPERLINK", True), ("=1+1", True), ("+cmd", True), ("-2+3", True), ("@SUM", True),
                            ("\tTAB", True), ("\\rCR", False)):  # a CR is shown escaped: no longer a risky start
        (value,) = [v for v in cells if v.startswith(start)]
        assert cells[value].data_type == "s" and bool(cells[value].quotePrefix) is prefixed, value


# ---- end to end: a catalog whose device and offer names are hostile ---------------------------------------

@pytest.fixture(scope="module")
def hostile_catalog(tmp_path_factory):
    from sizeup.hardware.catalog import builtin_data_dir

    folder = tmp_path_factory.mktemp("catalog")
    (folder / "devices").mkdir()
    device = yaml.safe_load((builtin_data_dir() / "devices" / "l4.yaml").read_text())
    device.update(id="evil-gpu", name=NAME)
    for key in ("aliases", "variant_group", "preferred_variant"):
        device.pop(key, None)
    (folder / "devices" / "evil-gpu.yaml").write_text(yaml.safe_dump(device))
    offers = {"provider": "evilcloud", "currency": "USD", "offers": [{
        "id": "evil-1x", "instance": "=cmd|' /C calc'!A0", "gpu": "evil-gpu", "gpu_count": 1, "region": "us-evil-1",
        "on_demand_per_hour": 0.5, "price_date": "2026-12-01", "source": f"test {CLEAR}", "retrieved": "2026-12-04"}]}
    (folder / "evil.yaml").write_text(yaml.safe_dump(offers))
    scenario = tmp_path_factory.mktemp("scenario") / "s.yaml"
    scenario.write_text(f"name: 'team <script>alert(1)</script>'\nmodel: llama-3.2-1b\ntask: chat\n"
                        f"traffic: {{users: 20}}\nconstraints: {{devices: [evil-gpu], providers: [evilcloud]}}\n")
    return folder, scenario


def run_cli(argv, capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_terminal_commands_print_names_escaped(hostile_catalog, capsys, monkeypatch):
    monkeypatch.setenv("SIZEUP_NO_CACHE", "1")
    folder, scenario = hostile_catalog
    for argv in (["hw", "show", "evil-gpu"], ["hw", "list"], ["hw", "offers", "--provider", "evilcloud"],
                 ["estimate", "llama-3.2-1b", "--device", "evil-gpu"], ["plan", str(scenario)],
                 ["hw", "show", "evil-gpu-nope"]):
        code, out, err = run_cli([*argv, "--catalog", str(folder)], capsys)
        assert code in (0, 1, 2), (argv, err)
        assert not CONTROL.search(out + err.replace("\n", "")), (argv, out[:300], err)
        assert not [line for line in (out + err).splitlines() if line.startswith("sizeup: error: forged")]
    code, out, err = run_cli(["hw", "show", "evil-gpu", "--catalog", str(folder)], capsys)
    assert code == 0 and "\\x1b[2J\\x1b[H\\rsizeup: error: forged" in out


@pytest.mark.parametrize("fmt", ["md", "html", "xlsx"])
def test_sheet_files_keep_names_inert(hostile_catalog, tmp_path, capsys, monkeypatch, fmt):
    monkeypatch.setenv("SIZEUP_NO_CACHE", "1")
    folder, scenario = hostile_catalog
    out_path = tmp_path / f"sheet.{fmt}"
    code, _, err = run_cli(["plan", str(scenario), "--catalog", str(folder), "--format", fmt, "--out", str(out_path)],
                           capsys)
    assert code in (0, 2), err
    if fmt == "xlsx":
        openpyxl = pytest.importorskip("openpyxl")
        wb = openpyxl.load_workbook(out_path)
        texts = [c for ws in wb for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
        risky = [c for c in texts if c.value.startswith(("=HYPERLINK", "=cmd"))]
        assert risky and all(c.data_type == "s" and c.quotePrefix for c in risky)
        assert any(c.data_type == "f" for ws in wb for row in ws.iter_rows() for c in row)  # our formulas stay live
        assert not any(CONTROL.search(c.value) for c in texts)
        return
    text = out_path.read_text()
    assert not CONTROL.search(text) and not re.search(r"(?<!\\)<script>alert", text)


def test_an_error_line_cannot_be_forged(capsys):
    code, out, err = run_cli(["hw", "show", f"x{CLEAR}{FORGE}"], capsys)
    assert code == 1 and err.count("\n") == 1 and not CONTROL.search(err.rstrip("\n"))
    assert err.startswith("sizeup: error: unknown device 'x\\x1b[2J\\x1b[H\\rsizeup: error: forged'")


def test_a_gguf_name_with_escapes_is_printed_inert_or_refused(tmp_path):
    from tests.ingest.model_files import STRING, tiny_llama_gguf

    path = tmp_path / "evil.gguf"
    path.write_bytes(tiny_llama_gguf(**{"general.name": (STRING, f"tiny{CLEAR}{FORGE}\n")}))
    proc = subprocess.run([sys.executable, "-m", "sizeup", "estimate", str(path), "--device", "rtx-4090"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr
    assert not CONTROL.search(proc.stdout + proc.stderr.replace("\n", ""))
    assert not [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("sizeup: error: forged")]
