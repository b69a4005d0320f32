"""The MCP gateway at /mcp/: the agent API spoken as MCP over Streamable HTTP.

`tools/list` answers the tools the agent may use; `tools/call` goes through the same
submit-decide-run path as `POST /api/v1/invocations/`, so every call is decided,
routed, run and audited exactly like a REST call.
"""
