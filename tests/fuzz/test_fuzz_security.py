"""Fuzz of the issue-27 classes owned by the scenario reader and the renderers (hypothesis, fixed seed):

- every key of every scenario section, misspelt by one edit, in a scenario of any task: refused in one line
  that names the misspelt path (never silently ignored, whichever task);
- any text — control characters, escapes, bidi overrides, HTML, Markdown, formula starts — as a name through
  the text, Markdown and HTML renderers: no raw control character, no raw tag, no forged line;
- YAML scalars that YAML 1.1 read as numbers or booleans, and keys given twice, in a scenario file: a
  Scenario or one ConfigError line."""

import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sizeup.errors import ConfigError
from sizeup.plan.scenario import KEY_TASKS, TASKS, load_scenario, parse_scenario
from sizeup.plan.sheet import Cell, Section, Sheet
from sizeup.report.html import render_html
from sizeup.report.markdown import render_markdown
from sizeup.report.terminal import render_sheet

SECTIONS = ("traffic", "sla", "job", "budget", "constraints", "edge")
BASES = {
    "chat": {"model": "llama-3.1-8b", "task": "chat", "traffic": {"users": 10}},
    "api": {"model": "llama-3.1-8b", "task": "api", "traffic": {"users": 10}},
    "vision": {"model": "m.py:f", "task": "vision", "traffic": {"peak_requests_per_s": 1}},
    "finetune": {"model": "llama-3.1-8b", "task": "finetune", "job": {"tokens": 1e8}},
    "pretrain": {"model": "llama-3.1-8b", "task": "pretrain", "job": {"tokens": 1e8}},
    "batch": {"model": "llama-3.1-8b", "task": "batch", "job": {"tokens": 1e8}},
    "edge": {"model": "llama-3.2-1b", "task": "edge", "edge": {"device": "x", "latency_s": 0.1}},
}
SECTION_KEYS = sorted(k for k in KEY_TASKS if k.count(".") == 1 and k.split(".")[0] in SECTIONS)
ROOT_KEYS = sorted(k for k in KEY_TASKS if "." not in k)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@st.composite
def misspelt(draw, key: str) -> str:
    """One edit of `key` (insert, delete, replace or swap a character) that is not a known key of its section."""
    alphabet = string.ascii_lowercase + "_0123456789"
    for _ in range(20):
        i = draw(st.integers(0, len(key) - 1))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "swap"]))
        c = draw(st.sampled_from(alphabet))
        typo = {"insert": key[:i] + c + key[i:], "delete": key[:i] + key[i + 1:],
                "replace": key[:i] + c + key[i + 1:],
                "swap": key[:i] + key[i + 1:i + 2] + key[i:i + 1] + key[i + 2:]}[kind]
        if typo and typo != key:
            return typo
    return key + "x"


@settings(derandomize=True, max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_misspelt_key_is_refused_in_every_section_and_task(data):
    task = data.draw(st.sampled_from(TASKS))
    path = data.draw(st.sampled_from(SECTION_KEYS + ROOT_KEYS))
    section, _, key = path.rpartition(".")
    typo = data.draw(misspelt(key))
    known = {k.rpartition(".")[2] for k in KEY_TASKS if k.rpartition(".")[0] == section}
    if typo in known:
        return
    scenario = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASES[task].items()}
    if section:
        scenario.setdefault(section, {})[typo] = 1
    else:
        scenario[typo] = 1
    shown = f"{section}.{typo}" if section else typo
    with pytest.raises(ConfigError) as info:
        parse_scenario(scenario)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"scenario key {shown!r} is not known"), (task, message)


NAMES = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.sampled_from(list("\x1b[2J\r\n\t\x00\x07\x9b\u202e\u2028<>&\"'|*_`[]()!#=+-@ab")),
            max_size=30),
    st.sampled_from(["<script>alert(1)</script>", "\x1b]0;title\x07", "ok\rsizeup: error: forged",
                     "=HYPERLINK(\"http://e\")", "[x](javascript:alert(1))", "<img src=x onerror=alert(1)>"]),
)


def _sheet(name: str) -> Sheet:
    return Sheet(title=f"sheet: {name}", scenario=name, meets=True, verdict=name,
                 inputs=(Cell(key="n", label=name, value=name, note=name),),
                 sections=(Section(title=name, cells=(Cell(key="d", label="device", value=name),),
                                   table_headers=("a",), table_rows=((name,),), notes=(name,)),),
                 assumptions=(name,))


@settings(derandomize=True, max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=NAMES)
def test_any_name_comes_out_inert(name):
    sheet = _sheet(name)
    text = render_sheet(sheet)
    assert not CONTROL.search(text)
    assert not any(line.startswith("sizeup: error:") for line in text.splitlines()) or \
        name.startswith("sizeup: error:")
    md = render_markdown(sheet)
    assert not CONTROL.search(md) and not re.search(r"(?<!\\)<[a-zA-Z/!?]", md)
    page = render_html(sheet)
    assert not CONTROL.search(page)
    body = page.split("<main>", 1)[1]
    tags = set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", body))
    assert tags <= {"h1", "h2", "section", "p", "div", "code", "table", "thead", "tbody", "tr", "th", "td", "ul",
                    "li", "figure", "figcaption", "svg"}, tags


YAML_VALUES = st.sampled_from(["1:30", "-1:30:00", "010", "0o17", "0x10", "1_000", "0b101", "yes", "no", "on", "off",
                               "Y", "NO", ".inf", ".nan", "1e3", "+5", "1,000", "~", "true", "2026-12-04", "0.5",
                               "'1:30'", "!!int 12", "!!float 1", "!!bool true", "[1, 2]", "{a: 1}"])


NUMBER = {"010": 10, "0o17": 15, "0x10": 16, "1e3": 1000.0, "+5": 5, "!!int 12": 12, "!!float 1": 1.0, "0.5": 0.5,
          ".inf": float("inf"), ".nan": float("nan")}
"""What YAML 1.2 reads as a number among YAML_VALUES; every other value is text, a boolean, a list, a mapping
or null, which a count refuses (null: the key's default)."""


@settings(derandomize=True, max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(users=YAML_VALUES, spot=YAML_VALUES, gpus=YAML_VALUES, twice=st.booleans())
def test_yaml_11_scalars_and_duplicates_in_a_file(tmp_path_factory, users, spot, gpus, twice):
    path = tmp_path_factory.mktemp("s") / "s.yaml"
    extra = "  users: 20\n" if twice else ""
    path.write_text(f"model: llama-3.1-8b\ntask: api\ntraffic:\n  users: {users}\n{extra}"
                    f"constraints:\n  spot: {spot}\n  max_gpus: {gpus}\n")
    try:
        scenario = load_scenario(path)
    except ConfigError as e:
        assert "\n" not in str(e)
        if twice:
            assert "key 'users' is given twice (first on line 4)" in str(e) or "scenario key" not in str(e)
        return
    assert not twice
    assert scenario.traffic.users == NUMBER[users]  # "1:30", "1_000", "0b101", "yes" never reach here as numbers
    assert scenario.constraints.max_gpus == (8 if gpus == "~" else NUMBER[gpus])
    assert scenario.constraints.spot is {"yes": True, "on": True, "true": True, "Y": None, "no": False, "NO": False,
                                         "off": False, "~": False, "!!bool true": True}[spot]
