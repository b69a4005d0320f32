"""Waiting for a descriptor to become readable, at any descriptor number.

``select.select`` refuses descriptors past 1024, which a worker supervising hundreds of
calls at once passes quickly; ``poll`` has no such limit. A hang-up or an error counts
as readable, as it does for ``select``: the next read says what happened.
"""

from __future__ import annotations

import math
import select
from typing import Any


def wait_readable(fd: int | Any, seconds: float) -> bool:
    """True once ``fd`` (a number, or an object with ``fileno()``) is readable, False
    after ``seconds``."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, math.ceil(seconds * 1000))))
