"""The MCP server over stdio, on the official MCP Python SDK (2.x, low-level server): lists the tools of
`sizeup.mcp.tools` with their schemas and answers a call with the verb's JSON, or its one-line error as an
error result. Each call runs in a worker thread, so the event loop keeps answering while a plan computes."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["build_server", "serve"]


def build_server():
    """The SDK server object (`mcp.server.lowlevel.Server`) carrying sizeup's tools."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server

    from sizeup import __version__
    from sizeup.cli.main import json_ready
    from sizeup.errors import describe_error
    from sizeup.mcp.tools import TOOLS, call_tool

    schemas = {name: tool.schema() for name, tool in TOOLS.items()}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=tool.description, input_schema=schemas[name])
            for name, tool in TOOLS.items()])

    async def run_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            data = await anyio.to_thread.run_sync(call_tool, params.name, params.arguments)
        except Exception as e:  # noqa: BLE001 — the boundary: every failure is one line for the client
            report = describe_error(e, context=f"sizeup mcp {params.name}")
            return types.CallToolResult(content=[types.TextContent(type="text", text=report.message)], is_error=True)
        text = json.dumps(json_ready(data), default=str)  # as --json: NaN and infinities are null
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=json.loads(text))

    return Server("sizeup", version=__version__,
                  instructions="Compute sizing: memory, speed and cost of serving or training a model on hardware. "
                               "Every figure is a range (low / typical / high) in SI units; read 'assumptions'.",
                  on_list_tools=list_tools, on_call_tool=run_tool)


def serve() -> None:
    """Serve on stdin / stdout until the client closes them."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server()

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
