"""Hostile YAML, regenerated from a seed: catalog device and offer files (`--catalog DIR`) and scenario files
(`sizeup plan`), with a hostile value in every numeric field, YAML 1.1 scalars, keys given twice, unknown
names, misplaced sections, names that carry escapes, and shapes that are deep, huge or not mappings at all."""

from __future__ import annotations

import random
from pathlib import Path

from tests.fuzz.redteam.common import hostile_name, sane_json, write, yaml_text
from tests.fuzz.redteam.runner import MARK, Case

YAML_NUMBERS = [".nan", ".inf", "-.inf", "1.0e+308", "1" + "0" * 40, "-1", "0", "-0.0", "0.5", "1e-300", "'12'",
                "true", "null", "[]", "{}", "1e3", "9" * 5000]
YAML_11 = ["1:30", "-1:30:00", "010", "0o17", "0x10", "1_000", "0b101", "yes", "no", "on", "off", "Y", "NO", "~",
           "2026-12-04", "1,000", "+.inf", ".NaN", "!!int 12", "!!float 1", "!!bool yes"]
CODE_TAGS = ["!!python/object/apply:os.system ['touch PWNED']", "!!python/name:os.system",
             "!!python/object/new:tempfile.mkdtemp []", "!!binary aGVsbG8=", "!!set {a, b}", "!<tag:yaml.org,2002:str> x",
             "!custom x"]
"""YAML tags that run code in an unsafe loader: each must be refused (or read as plain data), never run."""
MARKUP_NAMES = [f"=HYPERLINK(\"http://evil.example\",\"cmd\") {MARK}", f"+cmd|' /C calc'!A0 {MARK}",
                f"@SUM(1+1) [x](javascript:alert(1)) {MARK}", f"-1+1 <img src=x onerror=alert(1)> {MARK}",
                f"{MARK} | *bold* `code` # h"]
"""Names without control characters (which a scenario refuses) but with formula starts and markup."""

_DEVICE = {"id": "mydev", "name": "My Device", "vendor": "nvidia", "kind": "gpu", "memory_gib": "24",
           "memory_bandwidth_gb_per_s": "1000", "tdp_w": "300", "l2_mib": "40", "compute_units": "100",
           "boost_clock_mhz": "2000", "memory_type": "GDDR6X", "architecture": "ada", "source": "a test",
           "retrieved": "2026-12-04"}
_RATES = {"dense_tflops": {"bf16": "100", "fp16": "100"}, "vector_tflops": {"fp32": "20"},
          "pcie": {"gen": "4", "lanes": "16"}}
_OFFER = {"id": "acme-1", "instance": "a1", "gpu": "mydev", "gpu_count": "1", "region": "x", "vcpus": "8",
          "ram_gib": "64", "on_demand_per_hour": "1.5", "spot_per_hour": "0.5", "network_gbit_per_s": "100",
          "price_date": "2026-12-01", "source": "t", "retrieved": "2026-12-04"}


def _device_yaml(fields: dict[str, str], rates: dict[str, dict[str, str]] | None = None) -> str:
    text = "".join(f"{k}: {v}\n" for k, v in fields.items())
    for parent, children in (_RATES if rates is None else rates).items():
        text += f"{parent}:\n" + "".join(f"  {k}: {v}\n" for k, v in children.items())
    return text


def _offers_yaml(fields: dict[str, str]) -> str:
    return "provider: acme\ncurrency: USD\noffers:\n- " + "\n  ".join(f"{k}: {v}" for k, v in fields.items()) + "\n"


def _catalog_argv(folder: Path, rng: random.Random, *, hostile: bool = False) -> tuple[list[str], list[Path]]:
    """A command that reads the catalog folder and prints (or writes) what it holds."""
    cat = ["--catalog", str(folder)]
    choices = [(["hw", "list", *cat], []), (["hw", "list", *cat, "--json"], []), (["hw", "show", "mydev", *cat], []),
               (["hw", "show", "mydev", *cat, "--json"], []), (["hw", "offers", *cat], []),
               (["estimate", "llama-3.2-1b", "--device", "mydev", *cat, "--json"], []),
               (["estimate", "llama-3.2-1b", "--device", "mydev", *cat], []),
               (["train", "llama-3.2-1b", "--device", "mydev", *cat, "--json"], [])]
    if hostile:
        out = folder.parent / f"{folder.name}-sheet"
        choices += [(["plan", "llama-3.2-1b", "--device", "mydev", *cat, "--format", fmt, "--out", str(out) + ext,
                      "--plots", str(out) + "-plots"], [Path(str(out) + ext)])
                    for fmt, ext in (("md", ".md"), ("html", ".html"), ("xlsx", ".xlsx"), ("json", ".json"),
                                     ("text", ".txt"))]
        choices += [(["estimate", "llama-3.2-1b", "--devices", "all", *cat], [])]
    argv, outputs = rng.choice(choices)
    return list(argv), outputs


def catalog_cases(rng: random.Random, folder: Path) -> list[Case]:
    cases = []
    numeric = [k for k, v in _DEVICE.items() if v.replace(".", "").isdigit()]
    for i in range(36):  # a device number
        where = folder / f"num{i}"
        fields, rates = dict(_DEVICE), {k: dict(v) for k, v in _RATES.items()}
        value = rng.choice(YAML_NUMBERS + YAML_11[:8])
        if rng.random() < 0.3:
            parent = rng.choice(list(rates))
            key = rng.choice(list(rates[parent]))
            rates[parent][key] = value
            name = f"{parent}.{key}"
        else:
            name = rng.choice(numeric)
            fields[name] = value
        write(where / "mydev.yaml", _device_yaml(fields, rates))
        argv, _ = _catalog_argv(where, rng)
        sound = value in ("0.5", "1e3", "010", "0o17", "0x10") or value == "null" and name not in (
            "memory_gib", "memory_bandwidth_gb_per_s")
        expect = "either" if sound else "refuse"
        if name in ("compute_units", "pcie.gen", "pcie.lanes") and value == "0.5":
            expect = "refuse"
        cases.append(Case(f"device-{name}={value[:20]}", "numbers", argv, expect=expect, check=sane_json))
    for i in range(16):  # an offer number
        where = folder / f"offer{i}"
        write(where / "mydev.yaml", _device_yaml(_DEVICE))
        fields = dict(_OFFER)
        name = rng.choice(["gpu_count", "vcpus", "ram_gib", "on_demand_per_hour", "spot_per_hour", "network_gbit_per_s"])
        value = rng.choice(YAML_NUMBERS)
        fields[name] = value
        write(where / "acme.yaml", _offers_yaml(fields))
        argv = rng.choice([["hw", "offers", "--catalog", str(where), "--json"],
                           ["plan", "llama-3.2-1b", "--device", "mydev", "--catalog", str(where), "--json"],
                           ["train", "llama-3.2-1b", "--device", "mydev", "--offer", "acme-1", "--catalog", str(where),
                            "--json", "--tokens", "1e8"]])
        expect = "either" if value in ("0.5", "1e3", "null") or value == "0" and name != "gpu_count" else "refuse"
        cases.append(Case(f"offer-{name}={value[:20]}", "numbers", argv, expect=expect, check=sane_json))
    for i in range(14):  # names with escapes, formula starts and markup, through every renderer
        where = folder / f"name{i}"
        fields = dict(_DEVICE)
        field = rng.choice(["name", "vendor", "source", "compute_unit_name", "memory_type"])
        fields[field] = yaml_text(hostile_name(rng))
        write(where / "mydev.yaml", _device_yaml(fields))
        argv, outputs = _catalog_argv(where, rng, hostile=True)
        cases.append(Case(f"device-{field}-hostile", "escapes", argv, outputs=outputs, check=sane_json))
    for i, value in enumerate(YAML_11 + CODE_TAGS):  # YAML 1.1 readings and code-running tags
        where = folder / f"y11-{i}"
        fields = dict(_DEVICE)
        fields[rng.choice(["memory_gib", "tdp_w", "name", "compute_units"])] = value
        write(where / "mydev.yaml", _device_yaml(fields))
        argv, _ = _catalog_argv(where, rng)
        cls = "yaml11" if value in YAML_11 else "code"
        cases.append(Case(f"device-{value[:24]}", cls, argv, check=_no_pwned(where)))
    dup = _device_yaml(_DEVICE) + "memory_gib: 80\n"
    write(folder / "dup" / "mydev.yaml", dup)
    cases.append(Case("device-key-twice", "duplicates", ["hw", "show", "mydev", "--catalog", str(folder / "dup")],
                      expect="refuse", says="memory_gib"))
    write(folder / "dup2" / "mydev.yaml", _device_yaml(_DEVICE, {"dense_tflops": {"bf16": "100", "fp16": "1"}})
          + "  bf16: 1000\n")
    cases.append(Case("rate-key-twice", "duplicates", ["hw", "list", "--catalog", str(folder / "dup2")],
                      expect="refuse", says="bf16"))
    odd = {
        "unknown-key": _device_yaml(_DEVICE) + "memroy_gib: 24\n", "int-key": _device_yaml(_DEVICE) + "1: 2\n3: 4\n",
        "null-key": _device_yaml(_DEVICE) + "~: 2\n", "list-key": _device_yaml(_DEVICE) + "? [a, b]\n: 1\n",
        "top-list": "- 1\n- 2\n", "scalar": "hello\n", "empty": "", "comments": "# nothing\n",
        "deep": "a: " + "[" * 5000 + "]" * 5000 + "\n", "deep-map": "".join("  " * i + f"k{i}:\n" for i in range(3000)),
        "laughs": "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(9)),
        "recursive-alias": "a: &a [*a]\n", "1MiB": "notes: [" + "'x', " * 300_000 + "]\n",
        "id-mismatch": _device_yaml({**_DEVICE, "id": "other"}), "id-hostile": _device_yaml({**_DEVICE, "id":
                                                                                            yaml_text(hostile_name(rng))}),
        "long-name": _device_yaml({**_DEVICE, "name": "9" * 100_000 + "gb"}),
        "long-alias": _device_yaml(_DEVICE) + "aliases: ['" + "a" * 100_000 + "1']\n",
        "tabs": _device_yaml(_DEVICE).replace("  ", "\t"), "bom": "\ufeff" + _device_yaml(_DEVICE),
        "utf16": None, "nul": _device_yaml(_DEVICE) + "notes: ['a\x00b']\n",
        "date-retrieved": _device_yaml({**_DEVICE, "retrieved": "2026-13-45"}),
        "kind-hostile": _device_yaml({**_DEVICE, "kind": yaml_text(hostile_name(rng))}),
        "arch-unknown": _device_yaml({**_DEVICE, "architecture": "nosuch"}),
        "sustained-above-boost": _device_yaml({**_DEVICE, "sustained_clock_mhz": "5000"}),
        "variants-hostile": _device_yaml(_DEVICE) + "memory_options: [{memory_gib: .nan}]\n",
        "power-modes-hostile": _device_yaml(_DEVICE) + "power_modes: {'15w': {tdp_w: -1}}\n",
        "core-types-empty": _device_yaml(_DEVICE) + "core_types: []\n",
    }
    for id, text in odd.items():
        where = folder / f"odd-{id}"
        path = where / "mydev.yaml"
        if text is None:
            write(path, _device_yaml(_DEVICE).encode("utf-16"))
        else:
            write(path, text)
        cls = {"deep": "nested", "deep-map": "nested", "laughs": "nested", "recursive-alias": "nested",
               "1MiB": "nested", "long-name": "quadratic", "long-alias": "quadratic"}.get(id, "catalog")
        argv = rng.choice([["hw", "list", "--catalog", str(where)], ["hw", "show", "mydev", "--catalog", str(where)],
                           ["estimate", "llama-3.2-1b", "--device", "h100", "--catalog", str(where), "--json"]])
        expect = "either" if id in ("comments", "bom", "long-name", "long-alias") else "refuse"
        cases.append(Case(f"device-{id}", cls, argv, expect=expect, check=sane_json))
    for id, text in {"offer-unknown-gpu": _offers_yaml({**_OFFER, "gpu": "nosuch"}),
                     "offer-currency": _offers_yaml(_OFFER).replace("USD", "XXX"),
                     "offer-hostile-provider": _offers_yaml(_OFFER).replace("acme", yaml_text(hostile_name(rng)), 1),
                     "offer-empty": "provider: acme\ncurrency: USD\noffers: []\n",
                     "offer-id-twice": _offers_yaml(_OFFER) + "- " + "\n  ".join(f"{k}: {v}" for k, v in
                                                                                  _OFFER.items()) + "\n"}.items():
        where = folder / id
        write(where / "mydev.yaml", _device_yaml(_DEVICE))
        write(where / "acme.yaml", text)
        argv = rng.choice([["hw", "offers", "--catalog", str(where)],
                           ["plan", "llama-3.2-1b", "--device", "mydev", "--catalog", str(where), "--json"]])
        cases.append(Case(id, "catalog", argv, check=sane_json))
    return cases


def _no_pwned(where: Path):
    def check(result) -> str | None:
        return "a YAML tag ran code (PWNED written)" if (where / "PWNED").exists() or Path("PWNED").exists() else None
    return check


# ---- scenarios -------------------------------------------------------------------------------------------------------

BASES = {
    "chat": "model: llama-3.2-1b\ntask: chat\ntraffic:\n  users: 10\n",
    "api": "model: llama-3.2-1b\ntask: api\ntraffic:\n  peak_requests_per_s: 2\n  prompt_tokens: 500\n"
           "  output_tokens: 100\nsla:\n  ttft_p95_s: 2\n",
    "finetune": "model: llama-3.2-1b\ntask: finetune\njob:\n  tokens: 1e8\n  method: lora\n",
    "pretrain": "model: llama-3.2-1b\ntask: pretrain\njob:\n  tokens: 1e9\n",
    "batch": "model: llama-3.2-1b\ntask: batch\njob:\n  tokens: 1e8\n  deadline_hours: 24\n",
    "edge": "model: llama-3.2-1b\ntask: edge\nedge:\n  device: jetson-orin-nano-8gb\n  latency_s: 0.2\n",
}
NUMERIC_KEYS = {
    "traffic": ["users", "requests_per_day", "peak_requests_per_s", "requests_per_user_per_hour", "peak_hour_share",
                "peak_factor", "prompt_tokens", "output_tokens", "images_per_request"],
    "sla": ["ttft_p95_s", "tpot_p95_s", "e2e_p99_s", "ttft_p50_s"],
    "job": ["tokens", "deadline_hours", "epochs", "dataset_tokens", "seq", "rank", "global_batch"],
    "budget": ["monthly_usd", "job_usd"],
    "constraints": ["max_gpus", "headroom", "redundancy"],
    "edge": ["latency_s", "thermal_derate", "price_usd"],
}
TASK_SECTIONS = {"chat": ["traffic", "sla", "budget", "constraints"], "api": ["traffic", "sla", "budget", "constraints"],
                 "finetune": ["job", "budget", "constraints"], "pretrain": ["job", "budget", "constraints"],
                 "batch": ["job", "budget", "constraints"], "edge": ["edge"]}
NAME_KEYS = {"constraints": {"devices": "[{}]", "providers": "[{}]", "regions": "[{}]", "engines": "[{}]",
                             "quantizations": "[{}]"},
             "budget": {"pricing": "{}"}, "traffic": {"profile": "{}"}, "edge": {"device": "{}"},
             "": {"model": "{}", "task": "{}"}}


def _with(base: str, section: str, key: str, value: str) -> str:
    """`base` with `section.key: value` (the section added, or the key put first in it)."""
    import re

    if not section:
        return base + f"{key}: {value}\n"
    inside = re.search(rf"(?m)^{section}:\n(  .*\n)*?  {key}: .*\n", base)
    if inside:  # the key is there: its value replaced
        line = re.search(rf"(?m)^  {key}: .*\n", base[inside.start():])
        at = inside.start() + line.start()
        return base[:at] + f"  {key}: {value}\n" + base[at + len(line.group()):]
    if f"\n{section}:\n" in "\n" + base:
        return ("\n" + base).replace(f"\n{section}:\n", f"\n{section}:\n  {key}: {value}\n", 1)[1:]
    return base + f"{section}:\n  {key}: {value}\n"


def _plan(path: Path, rng: random.Random) -> list[str]:
    return rng.choice([["plan", str(path), "--json"], ["plan", str(path)], ["plan", str(path), "--format", "md"]])


def scenario_cases(rng: random.Random, folder: Path) -> list[Case]:
    cases = []
    n = 0

    def add(cls: str, id: str, text: str | bytes, expect: str = "either", says: str | None = None,
            argv: list[str] | None = None, outputs: list[Path] | None = None, check=sane_json):
        nonlocal n
        n += 1
        path = write(folder / f"s{n}.yaml", text)
        cases.append(Case(id, cls, argv or _plan(path, rng), expect=expect, says=says, outputs=outputs or [],
                          check=check))

    for _ in range(40):  # a hostile number in a key the task reads
        task = rng.choice(list(TASK_SECTIONS))
        section = rng.choice(TASK_SECTIONS[task])
        key = rng.choice(NUMERIC_KEYS[section])
        value = rng.choice(YAML_NUMBERS)
        sound = value in ("0.5", "1e3") and key not in ("max_gpus", "images_per_request", "epochs", "rank", "seq",
                                                        "global_batch", "redundancy", "users")
        zero_ok = value in ("0", "-0.0") and key in ("monthly_usd", "job_usd", "headroom", "price_usd",
                                                      "images_per_request", "redundancy") or value == "1e-300"
        add("numbers", f"{task}:{section}.{key}={value[:16]}", _with(BASES[task], section, key, value),
            expect="either" if sound or zero_ok or value == "null" else "refuse")
    for _ in range(24):  # YAML 1.1 scalars where a number or a flag is read
        task = rng.choice(["chat", "api", "finetune", "edge"])
        section = rng.choice(TASK_SECTIONS[task])
        key = rng.choice(NUMERIC_KEYS[section] + (["spot"] if section == "constraints" else []))
        value = rng.choice(YAML_11)
        expect = "either" if value in ("010", "0o17", "0x10", "!!int 12", "!!float 1", "~", "yes", "no", "on", "off",
                                       "!!bool yes") else "refuse"
        add("yaml11", f"{task}:{section}.{key}={value}", _with(BASES[task], section, key, value), expect=expect)
    for i, tag in enumerate(CODE_TAGS):
        task = rng.choice(["chat", "finetune"])
        add("code", f"tag-{tag[:30]}", _with(BASES[task], "", "name", tag), check=_no_pwned(folder))
        add("code", f"model-tag-{i}", BASES["chat"].replace("llama-3.2-1b", tag), check=_no_pwned(folder))
    for task, base in BASES.items():  # a key given twice
        section = TASK_SECTIONS[task][0]
        key = NUMERIC_KEYS[section][0] if section != "edge" else "latency_s"
        text = _with(base, section, key, "1")
        text = ("\n" + text).replace(f"\n{section}:\n", f"\n{section}:\n  {key}: 100000\n", 1)[1:]
        add("duplicates", f"{task}:{section}.{key}-twice", text, expect="refuse", says=key)
    add("duplicates", "model-twice", BASES["chat"] + "model: llama-3.1-70b\n", expect="refuse", says="model")
    add("duplicates", "section-twice", BASES["chat"] + "traffic:\n  users: 1000000\n", expect="refuse", says="traffic")
    add("duplicates", "owned-key-twice", BASES["chat"] + "constraints:\n  owned:\n  - {device: l4, count: 1, count: 9}\n",
        expect="refuse", says="count")
    add("duplicates", "merge-key", "base: &b {users: 10}\n" + BASES["chat"].replace("traffic:\n  users: 10\n",
                                                                                     "traffic:\n  <<: *b\n  users: 20\n"))
    for _ in range(30):  # an unknown name where a name is read
        task = rng.choice(["chat", "api", "finetune", "batch", "edge"])
        section = rng.choice([s for s in NAME_KEYS if s == "" or s in TASK_SECTIONS[task]])
        key = rng.choice(list(NAME_KEYS[section]))
        name = rng.choice(["nosuch", "h1OO", "vlm", "aws-gov", "q4_k_mm", "x" * 100_000, hostile_name(rng),
                           "9" * 50_000 + "gb", "", " ", "llama-3.2-1b" * 5000])
        value = NAME_KEYS[section][key].format(yaml_text(name))
        cls = "quadratic" if len(name) > 1000 else "unknown-names"
        add(cls, f"{task}:{section}.{key}={name[:16]!r}x{len(name)}", _with(BASES[task], section, key, value),
            expect="refuse")
    for task in BASES:  # a section the task does not read, and a misspelt key
        other = next(s for s in ("edge", "job", "traffic", "sla") if s not in TASK_SECTIONS[task] and
                     not (task == "edge" and s == "traffic"))
        add("unknown-names", f"{task}:misplaced-{other}", _with(BASES[task], other, NUMERIC_KEYS[other][0], "5"),
            expect="refuse", says=other)
        section = TASK_SECTIONS[task][0]
        add("unknown-names", f"{task}:misspelt", _with(BASES[task], section, "userz", "5"), expect="refuse",
            says="userz")
    for fmt, ext in (("md", ".md"), ("html", ".html"), ("xlsx", ".xlsx"), ("json", ".json"), ("text", ".txt")):
        name = yaml_text(rng.choice(MARKUP_NAMES))
        text = BASES[rng.choice(["chat", "api", "finetune"])] + f"name: {name}\n"
        out = folder / f"sheet{n}{ext}"
        plots = folder / f"plots{n}"
        add("escapes", f"name-to-{fmt}", text, argv=["plan", str(folder / f"s{n + 1}.yaml"), "--format", fmt,
                                                    "--out", str(out), "--plots", str(plots)],
            outputs=[out, plots])
    add("escapes", "controls-in-name", BASES["chat"] + f"name: {yaml_text(hostile_name(rng))}\n",
        argv=["plan", str(folder / f"s{n + 1}.yaml")], expect="refuse", says="scenario key 'name'")
    add("escapes", "name-to-deploy", BASES["chat"] + f"name: {yaml_text(rng.choice(MARKUP_NAMES))}\n",
        argv=["plan", str(folder / f"s{n + 1}.yaml"), "--deploy", str(folder / "deploy")], outputs=[folder / "deploy"])
    for id, text in {"top-list": "- 1\n", "scalar": "chat\n", "empty": "", "comments": "# x\n", "null": "~\n",
                     "deep": "traffic: " + "[" * 5000 + "]" * 5000 + "\n",
                     "deep-map": "".join("  " * i + f"k{i}:\n" for i in range(3000)),
                     "laughs": "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
                         f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n"
                         for i in range(9)),
                     "recursive": "model: &a [*a]\n", "2MiB": BASES["chat"] + "# " + "x" * 2**21 + "\n",
                     "binary": bytes(range(256)) * 8, "utf16": BASES["chat"].encode("utf-16"),
                     "multi-doc": BASES["chat"] + "---\n" + BASES["api"], "tabs": BASES["chat"].replace("  ", "\t"),
                     "unknown-task": BASES["chat"].replace("task: chat", "task: chatt"),
                     "task-number": BASES["chat"].replace("task: chat", "task: 1"),
                     "vision-no-torch-model": "model: /etc/passwd:build\ntask: vision\ninput_shape: 1x3x8x8\n"
                                              "traffic: {peak_requests_per_s: 1}\n",
                     "model-path-gguf": "model: /dev/zero\ntask: chat\ntraffic: {users: 1}\n",
                     "model-fifo-like": "model: /proc/self/fd/0\ntask: chat\ntraffic: {users: 1}\n"}.items():
        cls = "nested" if id in ("deep", "deep-map", "laughs", "recursive", "2MiB") else "scenario"
        add(cls, id, text, expect="refuse")
    return cases
