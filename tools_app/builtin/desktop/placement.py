"""Which machine holds an agent's desktop session, for the calls that must reach it.

A session's processes and control socket live on the machine whose worker started it.
While it stands, its holder keeps a short-lived Redis key naming that machine (renewed
at every check of the session, removed when it ends); calls of that agent's desktop
(and a person's clicks and captures) are sent to that machine's queue, so any worker of
any machine may take the first launch and the rest follow the session. A machine that
dies stops renewing: its key lapses within ``PLACEMENT_SECONDS``, and calls already sent
to its queue are sent again by the dispatch sweep, to the category's own queue.
"""

from __future__ import annotations

from typing import Final

import structlog

from common.platform.redis import redis_client
from tools_app.worker.machine import machine_name, machine_queue

log = structlog.get_logger("synthorg.desktop")

PLACEMENT_PREFIX: Final = "synthorg:desktop-machine:"
# How long a key outlives its last renewal (the holder renews it every check).
PLACEMENT_SECONDS: Final = 30
# Removes the key only while it still names this machine (another may hold it now).
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _key(agent_id: str) -> str:
    return f"{PLACEMENT_PREFIX}{agent_id}"


def placement_hold(agent_id: str) -> None:
    """Name this machine as the holder of ``agent_id``'s session (set or renewed)."""
    try:
        redis_client().set(_key(agent_id), machine_name(), ex=PLACEMENT_SECONDS)
    except Exception as exc:  # calls then go to the category's queue, as before a session
        log.warning("desktop_placement_not_written", agent=agent_id, error=str(exc))


def placement_release(agent_id: str) -> None:
    """The session on this machine ended: its calls go to the category's queue again."""
    try:
        redis_client().eval(_RELEASE, 1, _key(agent_id), machine_name())
    except Exception as exc:  # the key lapses by itself
        log.warning("desktop_placement_not_removed", agent=agent_id, error=str(exc))


def placement_queue(agent_id: str) -> str | None:
    """The queue of the machine holding ``agent_id``'s session; None when none stands
    (or Redis cannot say: the call then goes to the category's queue)."""
    try:
        held = redis_client().get(_key(agent_id))
    except Exception:
        return None
    if not held:
        return None
    return machine_queue(held.decode() if isinstance(held, bytes) else str(held))
