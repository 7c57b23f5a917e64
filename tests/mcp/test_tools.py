"""The MCP tool table without the SDK: schemas from the options dataclasses, calls equal to the API."""

import dataclasses
import json

import pytest

from sizeup import api
from sizeup.errors import ConfigError
from sizeup.mcp.tools import TOOLS, call_tool


@pytest.mark.parametrize("name, options", [("estimate", api.EstimateOptions), ("fit", api.FitOptions),
                                           ("compare", api.CompareOptions), ("train", api.TrainOptions),
                                           ("plan", api.PlanOptions)])
def test_each_schema_is_its_options_dataclass(name, options):
    schema = TOOLS[name].schema()
    fields = {f.name: f for f in dataclasses.fields(options)}
    properties = schema["properties"]
    positional = TOOLS[name].positional
    assert set(properties) == {positional} | (set(fields) - {"catalog", "db", "inputs", "input_specs", "dtype"})
    assert positional in schema["required"] and schema["additionalProperties"] is False
    for key, prop in properties.items():
        if key != positional:
            assert prop["description"] == fields[key].metadata["help"]
    json.dumps(schema)  # plain JSON


def test_schema_types_bounds_and_choices():
    estimate = TOOLS["estimate"].schema()["properties"]
    assert estimate["batch"] == {"type": "integer", "minimum": 1, "maximum": 10**7,
                                 "description": "concurrent sequences", "default": 1}
    assert estimate["device"]["type"] == "string"  # required: no null, and a DeviceSpec has no JSON form
    assert estimate["image_size"]["anyOf"][0]["prefixItems"] == [{"type": "integer", "minimum": 1, "maximum": 100_000}] * 2
    train = TOOLS["train"].schema()["properties"]
    assert train["method"]["enum"] == ["full", "lora", "qlora", "freeze", "dora"]
    assert train["targets"] == {"type": "array", "items": {"type": "string"}, "default": ["q_proj", "v_proj"],
                                "description": train["targets"]["description"]}


def test_a_call_is_the_api_result():
    got = call_tool("estimate", {"model": "llama-3.1-8b", "device": "rtx-4090", "quant": "q4_k_m",
                                 "engine": "llama.cpp"})
    assert got == api.estimate("llama-3.1-8b", device="rtx-4090", quant="q4_k_m", engine="llama.cpp").to_dict()
    assert call_tool("fit", {"device": "rtx-4090", "models": ["qwen2.5-7b"]}) == \
        api.fit("rtx-4090", models=("qwen2.5-7b",)).to_dict()


@pytest.mark.parametrize("name, arguments, message", [
    ("estimate", {"device": "rtx-4090"}, "estimate: 'model' is required"),
    ("estimate", {"model": "llama-3.1-8b", "device": "rtx-4090", "catalog": ["/etc"]},
     "option 'catalog' is not available to MCP clients"),
    ("train", {"model": "pkg.mod:make", "device": "h100"}, "names Python code to import"),
    ("estimate", {"model": "llama-3.1-8b", "device": "rtx-4090", "batch": "lots"}, "batch='lots': expected an integer"),
    ("nope", {}, "unknown tool 'nope'"),
])
def test_bad_calls_are_one_line(name, arguments, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_tool(name, arguments)


def test_a_scenario_file_naming_code_is_refused(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: v\nmodel: mymodels.py:build\ntask: vision\ninput_shape: 1x3x224x224\n"
                    "traffic: {peak_requests_per_s: 1}\n")
    with pytest.raises(ConfigError, match="names Python code to import"):
        call_tool("plan", {"scenario": str(path)})


def test_without_the_sdk_the_command_says_what_to_install(monkeypatch, capsys):
    import sys

    from sizeup.cli.main import main

    monkeypatch.setitem(sys.modules, "mcp", None)
    assert main(["mcp"]) == 1
    err = capsys.readouterr().err
    assert "sizeup mcp needs the MCP Python SDK: pip install 'sizeup[mcp]'" in err and err.count("\n") == 1
