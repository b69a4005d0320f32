"""Stop signals noted without work in the handler: the main loop reads them from a pipe.

A Python signal handler runs between two bytecodes of the main thread, even
while that thread holds a lock (a `threading.Event`'s, the output's); a handler
that takes a lock or writes a log line can then wait for itself forever. Here
the C-level handler only writes the signal number to a pipe (set_wakeup_fd),
the Python handler does nothing, and the main loop waits on the pipe.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_STOP_NUMBERS = frozenset(int(s) for s in STOP_SIGNALS)


def _noted(_signum: int, _frame: FrameType | None) -> None:
    """Nothing to do here: the signal's number is already in the wakeup pipe."""


class StopSignals:
    """Install once, in the main thread, before any child starts."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self.received: list[int] = []
        signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        for signum in STOP_SIGNALS:
            signal.signal(signum, _noted)

    @property
    def stop_requested(self) -> bool:
        return self.count() > 0

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds or until a signal comes; True once one has."""
        return self.wait_beyond(0, timeout)

    def wait_beyond(self, seen: int, timeout: float, *, only: int | None = None) -> bool:
        """Like `wait`, for a signal after the first ``seen`` (``only`` that signal)."""
        if not self._beyond(seen, only):
            with contextlib.suppress(InterruptedError):
                select.select([self._read], [], [], max(0.0, timeout))
        return self._beyond(seen, only)

    def _beyond(self, seen: int, only: int | None) -> bool:
        self._drain()
        later = self.received[seen:]
        return bool(later) if only is None else only in later

    def count(self) -> int:
        self._drain()
        return len(self.received)

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._read, 64)
            except BlockingIOError:
                return
            if not chunk:
                return
            self.received.extend(b for b in chunk if b in _STOP_NUMBERS)
