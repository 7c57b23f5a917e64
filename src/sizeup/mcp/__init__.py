"""`sizeup mcp`: the API's verbs as Model Context Protocol tools over stdio, for agents and assistants.

`tools.py` holds the tool table, each tool's JSON Schema (from the verb's options dataclass) and the call that
turns arguments into the verb's `to_dict()` or its one-line error; it needs no SDK. `server.py` serves the table
with the official MCP Python SDK (`pip install 'sizeup[mcp]'`), imported only when `sizeup mcp` runs.
"""
