"""Runs between the bridge and a stdio MCP server: the server's standard output passes on
unchanged, and the server is stopped when one message (a line) grows past the cap.

Usage: ``python3 -I -S wire_cap.py MAX_BYTES -- COMMAND...``. The MCP client keeps a
line in memory until its newline comes: without a cap, one endless line from a server
would fill the worker's memory (and cost its CPU) outside every ceiling of the server's
own sandbox. Standard input and standard error are the command's own (inherited); only
its standard output passes through here, 64 KiB at a time, never held. Standard library
only, run by the worker's interpreter outside the sandbox; the exit status is the
command's (128 + the signal when one ended it).
"""

from __future__ import annotations

import os
import subprocess
import sys

CHUNK = 65536


def _write_all(data: bytes) -> bool:
    view = memoryview(data)
    while view:
        try:
            written = os.write(1, view)
        except BrokenPipeError:
            return False  # the client is gone: the command goes too
        view = view[written:]
    return True


def relay(cap: int, command: list[str]) -> int:
    child = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert child.stdout is not None
    wire = child.stdout.fileno()
    pending = 0  # bytes of the message under way (since the last newline)
    while chunk := os.read(wire, CHUNK):
        end = chunk.rfind(b"\n")
        pending = len(chunk) - end - 1 if end >= 0 else pending + len(chunk)
        if pending > cap:
            sys.stderr.write(
                f"synthorg: the server wrote a message of more than {cap} bytes "
                "(SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES); it was stopped\n"
            )
            sys.stderr.flush()
            child.kill()
            break
        if not _write_all(chunk):
            child.kill()
            break
    status = child.wait()
    return status if status >= 0 else 128 - status


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        sys.stderr.write("usage: wire_cap.py MAX_BYTES -- COMMAND...\n")
        os._exit(2)
    os._exit(relay(int(argv[0]), argv[2:]))


if __name__ == "__main__":
    main(sys.argv[1:])
