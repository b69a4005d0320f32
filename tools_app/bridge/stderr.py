"""The last lines a stdio MCP server wrote to its standard error, for the admins.

A server that fails to start usually says why only there (``Cannot find module …``).
Its standard error is a pipe read by a thread of its own as the server writes, so the
server never blocks on it and only a bounded tail is kept in memory. The tail is the
server's text, untrusted: escapes and invisible characters are stripped, the console's
secrets and the server's own secret values redacted, and it is cut to ``MAX_LINES``
lines and ``MAX_BYTES`` bytes (the last ones kept).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from typing import TextIO

from tools_app.sanitize import sanitize_output

MAX_LINES = 20
MAX_BYTES = 4096
# Bytes kept while reading: room for MAX_LINES lines once invisible bytes are gone.
_KEEP_BYTES = 4 * MAX_BYTES
_READ_SIZE = 65536


class StderrTail:
    """A pipe for one server's standard error, drained into a bounded tail."""

    def __init__(self, on_end: Callable[[], object] | None = None) -> None:
        """``on_end`` is called (from the reading thread) when every writer has closed
        the pipe: the server and whatever it started have ended."""
        self._on_end = on_end
        self._writer: TextIO | None = None
        self._thread: threading.Thread | None = None
        self._kept = bytearray()
        self._lock = threading.Lock()
        self._secrets: tuple[str, ...] = ()

    def open(self) -> TextIO:
        """The end to give the server as its standard error (read from here on)."""
        assert self._thread is None, "a tail follows one server start"
        read_fd, write_fd = os.pipe()
        self._writer = open(write_fd, "w")  # noqa: SIM115 - closed by spawned()
        self._thread = threading.Thread(
            target=self._drain, args=(read_fd,), name="synthorg-mcp-stderr", daemon=True
        )
        self._thread.start()
        return self._writer

    def spawned(self) -> None:
        """Close this process's copy of the writing end (the server holds its own), so
        the tail ends when the server does. Safe to call more than once."""
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()

    def redact(self, values: Iterable[str]) -> None:
        """Values the server was given (its secrets), to be redacted from the tail."""
        self._secrets = (*self._secrets, *(v for v in values if v))

    def _drain(self, read_fd: int) -> None:
        try:
            while chunk := os.read(read_fd, _READ_SIZE):
                with self._lock:
                    self._kept += chunk
                    if len(self._kept) > _KEEP_BYTES:
                        del self._kept[: len(self._kept) - _KEEP_BYTES]
        except OSError:
            pass
        finally:
            os.close(read_fd)
            if self._on_end is not None:
                self._on_end()

    def text(self, *, known_secrets: Iterable[str] = (), wait_seconds: float = 2.0) -> str:
        """The sanitised tail; waits up to ``wait_seconds`` for the server's last words
        once it has ended (its end of the pipe closed)."""
        self.spawned()
        if self._thread is None:
            return ""
        self._thread.join(wait_seconds)
        with self._lock:
            raw = bytes(self._kept)
        return sanitised_tail(raw, known_secrets=(*known_secrets, *self._secrets))


def sanitised_tail(raw: bytes, *, known_secrets: Iterable[str] = ()) -> str:
    """The last ``MAX_LINES`` non-blank lines of ``raw``, sanitised, within ``MAX_BYTES``."""
    text = raw.decode("utf-8", errors="replace")
    # Room for every redaction marker (longer than a short secret): only lines are cut.
    room = 4 * len(text) + 64
    clean = sanitize_output(text, known_secrets=tuple(known_secrets), max_chars=room).text
    lines = [line.rstrip() for line in clean.split("\n") if line.strip()][-MAX_LINES:]
    kept: list[str] = []
    budget = MAX_BYTES
    for line in reversed(lines):
        data = line.encode()
        if len(data) + 1 > budget:
            if budget > 1:  # the line that does not fit: its end, as far as it does
                kept.append(data[-(budget - 1) :].decode(errors="ignore"))
            break
        kept.append(line)
        budget -= len(data) + 1
    return "\n".join(reversed(kept))
