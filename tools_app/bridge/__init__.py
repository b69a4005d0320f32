"""The MCP bridge: upstream MCP servers whose tools the console governs like its own.

``definitions`` is the pure core both halves share: what an upstream server says a tool
is, and the hash that pins it.
"""
