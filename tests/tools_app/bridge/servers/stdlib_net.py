"""A minimal stdio MCP server on the standard library alone, for the docker sandbox
(its image has Python but not the SDK). Newline-delimited JSON-RPC as the MCP stdio
transport specifies: ``initialize``, ``ping``, ``tools/list`` and ``tools/call`` of
``fetch`` (an HTTP GET with urllib, which honours the proxy variables) and ``env``.
"""

import base64
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request

READ = {"readOnlyHint": True}
TOOLS = [
    {
        "name": "fetch",
        "description": "GET the URL; say what came back or why not.",
        "inputSchema": {
            "type": "object",
            "properties": {"url": {"type": "string"}},
            "required": ["url"],
        },
        "annotations": READ,
    },
    {
        "name": "env",
        "description": "One environment variable, plain and base64-encoded, and its SHA-256.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
        "annotations": READ,
    },
]


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as answer:
            return f"GOT {answer.status} {answer.read().decode()}"
    except urllib.error.HTTPError as exc:
        return f"REFUSED {exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError) as exc:
        return f"FAILED {exc}"


def env(name):
    value = os.environ.get(name)
    if value is None:
        return f"{name} is not set"
    digest = hashlib.sha256(value.encode()).hexdigest()
    return f"{name}={value} base64={base64.b64encode(value.encode()).decode()} sha256={digest}"


def answer(message):
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stdlib-net", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        tool = {"fetch": lambda: fetch(arguments["url"]), "env": lambda: env(arguments["name"])}
        text = tool[params["name"]]()
        return {"content": [{"type": "text", "text": text}], "isError": False}
    raise LookupError(method)


def main():
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification or a reply: nothing to answer
        try:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
        except (LookupError, KeyError) as exc:
            error = {"code": -32601, "message": f"not supported: {exc}"}
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
