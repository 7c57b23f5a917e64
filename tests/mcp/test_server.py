"""`sizeup mcp` answers through the official MCP SDK's own stdio client, which spawns it as a process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from sizeup import api  # noqa: E402
from tests.api.conftest import as_json  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")


async def _session_calls(calls):
    params = StdioServerParameters(command=sys.executable, args=["-m", "sizeup", "mcp"],
                                   env={**os.environ, "PYTHONPATH": SRC})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return listed, results


def test_the_sdk_client_gets_an_estimate_and_an_error():
    arguments = {"model": "llama-3.1-8b", "device": "rtx-4090", "quant": "q4_k_m", "engine": "llama.cpp"}
    listed, (ok, bad) = anyio.run(_session_calls, [("estimate", arguments),
                                                   ("estimate", {"model": "llama-3.1-8b", "device": "rtx-9999"})])
    assert [t.name for t in listed.tools] == ["estimate", "fit", "compare", "train", "plan"]
    assert listed.tools[0].input_schema["required"] == ["model", "device"]
    options = {k: v for k, v in arguments.items() if k != "model"}
    expected = as_json(api.estimate(arguments["model"], **options).to_dict())
    assert not ok.is_error and ok.structured_content == expected and json.loads(ok.content[0].text) == expected
    assert bad.is_error and "unknown device 'rtx-9999'" in bad.content[0].text
    assert "\n" not in bad.content[0].text


def test_the_server_is_not_imported_unless_the_command_runs():
    code = ("import sys; from sizeup.cli.main import build_parser; build_parser('*'); "
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'sizeup.mcp'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         env={**os.environ, "PYTHONPATH": SRC}).stdout
    assert out.strip() == "[]"
