"""The machine a worker runs on, and its queue: work bound to one machine (a desktop
session, whose processes and control socket live there) is sent to the queue every
worker of that machine consumes besides its own."""

from __future__ import annotations

import re
import socket
from typing import Final

from django.conf import settings

MACHINE_QUEUE_PREFIX: Final = "machine."
_NAME: Final = re.compile(r"[^A-Za-z0-9._-]")


def machine_name() -> str:
    """``SYNTHORG_MACHINE``, else the host name (as a queue name may spell it)."""
    configured: str = settings.SYNTHORG_MACHINE
    return configured or _NAME.sub("-", socket.gethostname())[:64] or "machine"


def machine_queue(name: str) -> str:
    """The queue of ``name``'s workers."""
    return f"{MACHINE_QUEUE_PREFIX}{name}"
