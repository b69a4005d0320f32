"""The live picture of an agent's desktop on its page: captures asked for by the page,
taken by a worker that reaches the session, kept a short while in Redis.

A page asks at most once per ``watch_seconds`` per agent whoever watches (a Redis key
set only when absent, expiring after that time), so open pages cannot flood the
workers; a capture message older than two periods is dropped unrun. The worker keeps
the picture under its SHA-256 and names the newest; the page shows a picture by that
digest and the bytes given out are checked against it.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Final

import structlog
from celery import current_app

from common.platform.redis import redis_client
from common.settings_config import synthorg_config
from tools_app.builtin.desktop.session import DesktopSessionError
from tools_app.builtin.desktop.watch import live_capture
from tools_app.selectors.desktop import asked_key, latest_key, picture_key
from tools_app.services.desktop_control import desktop_route
from trust_app.models import Agent

CAPTURE_TASK: Final = "tools_app.desktop_capture"
# How many refresh periods a picture and the newest state outlive their capture.
KEEP_PERIODS: Final = 20
MIN_KEEP_SECONDS: Final = 60
log = structlog.get_logger("synthorg.desktop")


def keep_seconds(watch_seconds: float) -> int:
    return max(MIN_KEEP_SECONDS, int(watch_seconds * KEEP_PERIODS))


def desktop_capture_request(*, agent: Agent) -> bool:
    """Ask the desktop's workers for a fresh picture unless one was asked for within the
    last ``watch_seconds``; True when this asked."""
    section = synthorg_config().desktop
    if section is None:
        return False
    period = max(1, round(section.watch_seconds))
    if not redis_client().set(asked_key(str(agent.id)), b"1", nx=True, ex=period):
        return False
    current_app.send_task(
        CAPTURE_TASK,
        args=[str(agent.id)],
        queue=desktop_route(str(agent.id)),
        ignore_result=True,
        expires=2 * section.watch_seconds,
    )
    return True


def desktop_capture_store(*, agent_id: str) -> bool:
    """Take the picture (worker side) and keep it; True when a session stood."""
    section = synthorg_config().desktop
    agent = Agent.objects.filter(id=agent_id).only("id", "workspace").first()
    if section is None or agent is None or not agent.workspace:
        return False
    keep = keep_seconds(section.watch_seconds)
    state: dict[str, object] = {"at": time.time(), "live": False}
    try:
        capture = live_capture(section, str(agent.id), Path(agent.workspace))
    except DesktopSessionError as exc:
        log.warning("desktop_capture_failed", agent=agent_id, code=exc.code)
        state.update(live=True, error=exc.message[:300])
    else:
        if capture.data is not None:
            digest = hashlib.sha256(capture.data).hexdigest()
            client = redis_client()
            client.set(picture_key(agent_id, digest), capture.data, ex=keep)
            state.update(live=True, sha256=digest, width=capture.width, height=capture.height)
    redis_client().set(latest_key(agent_id), json.dumps(state), ex=keep)
    return bool(state["live"])
