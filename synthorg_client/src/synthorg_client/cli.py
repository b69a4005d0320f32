"""Command line: `python -m synthorg_client call read_file '{"path": "notes.txt"}'`.

Exit codes: 0 the invocation succeeded (or the request did, for commands that
do not answer an invocation); 1 the invocation ended otherwise; 2 bad usage;
3 the invocation had not finished when the wait ran out; 4 the console
answered with an error or could not be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from synthorg_client.client import Client
from synthorg_client.errors import SynthOrgError
from synthorg_client.models import Invocation

EXIT_OK = 0
EXIT_NOT_SUCCEEDED = 1
EXIT_USAGE = 2
EXIT_NOT_FINISHED = 3
EXIT_ERROR = 4
DEFAULT_CLI_WAIT = 60.0


class CommandUsageError(Exception):
    """The command line cannot be run as given."""


def _parser() -> argparse.ArgumentParser:
    # The connection options are accepted before or after the command.
    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument("--url", default=argparse.SUPPRESS, help="console URL")
    connection.add_argument("--token", default=argparse.SUPPRESS, help="agent token")
    connection.add_argument("--timeout", type=float, default=argparse.SUPPRESS)
    parser = argparse.ArgumentParser(
        prog="python -m synthorg_client",
        description="Call tools through a SynthOrg Console.",
        epilog=(
            "exit codes: 0 succeeded, 1 invocation did not succeed, 2 bad usage, "
            "3 not finished within the wait, 4 error answer or console unreachable"
        ),
    )
    parser.add_argument("--url", default=os.environ.get("SYNTHORG_URL"), help="console URL")
    parser.add_argument("--token", default=os.environ.get("SYNTHORG_TOKEN"), help="agent token")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help_text, parents=[connection])

    call = command("call", "run a tool; prints the invocation")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object, or - for stdin")
    call.add_argument("--wait", type=float, default=DEFAULT_CLI_WAIT, help="seconds to wait")
    call.add_argument("--idempotency-key")
    call.add_argument("--task-id")

    command("me", "this agent")
    command("tools", "the tools this agent may use")
    tool = command("tool", "one tool in full")
    tool.add_argument("name")
    resource = command("resource", "one resource of a tool")
    resource.add_argument("name")
    resource.add_argument("resource_id")

    get = command("get", "one invocation")
    get.add_argument("id")
    get.add_argument("--wait", type=float, default=0.0, help="seconds to wait")
    cancel = command("cancel", "cancel an invocation")
    cancel.add_argument("id")
    return parser


def _arguments(text: str, stdin: TextIO) -> dict[str, Any]:
    if text == "-":
        text = stdin.read()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandUsageError(f"arguments are not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise CommandUsageError("arguments must be a JSON object")
    return value


def _print(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _invocation_exit(invocation: Invocation) -> int:
    if invocation.succeeded:
        return EXIT_OK
    return EXIT_NOT_SUCCEEDED if invocation.is_terminal else EXIT_NOT_FINISHED


def _run(options: argparse.Namespace, client: Client, out: TextIO, stdin: TextIO) -> int:
    command = options.command
    if command == "call":
        invocation = client.call(
            options.tool,
            _arguments(options.arguments, stdin),
            wait=options.wait,
            idempotency_key=options.idempotency_key,
            task_id=options.task_id,
        )
    elif command in ("get", "cancel"):
        invocation = (
            client.get(options.id, wait=options.wait)
            if command == "get"
            else client.cancel(options.id)
        )
    else:
        if command == "me":
            _print(client.me(), out)
        elif command == "tools":
            _print({"tools": client.tools()}, out)
        elif command == "tool":
            _print(client.tool(options.name), out)
        else:
            _print(client.tool_resource(options.name, options.resource_id), out)
        return EXIT_OK
    _print(invocation.to_json(), out)
    return EXIT_OK if command == "cancel" else _invocation_exit(invocation)


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the command line; answers the exit code."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    parser = _parser()
    try:
        options = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if not options.url or not options.token:
        err.write("error: give --url and --token, or set SYNTHORG_URL and SYNTHORG_TOKEN\n")
        return EXIT_USAGE
    try:
        with Client(options.url, options.token, timeout=options.timeout) as client:
            return _run(options, client, out, stdin or sys.stdin)
    except CommandUsageError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    except SynthOrgError as exc:
        _print(exc.to_json(), err)
        return EXIT_ERROR
