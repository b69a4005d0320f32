"""What the agent's page shows of its desktop: who holds it, and the newest picture."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from common.platform.redis import redis_client
from tools_app.models import DesktopTakeover
from trust_app.models import Agent

_DIGEST: Final = re.compile(r"[0-9a-f]{64}")
# Redis keys of the live pictures (written by tools_app.services.desktop_watch).
PREFIX: Final = "synthorg:desktop"


def asked_key(agent_id: str) -> str:
    return f"{PREFIX}:asked:{agent_id}"


def latest_key(agent_id: str) -> str:
    return f"{PREFIX}:latest:{agent_id}"


def picture_key(agent_id: str, sha256: str) -> str:
    return f"{PREFIX}:picture:{agent_id}:{sha256}"


@dataclass(frozen=True, slots=True)
class DesktopView:
    """The newest state a worker reported: no state yet, no session, or a picture."""

    known: bool
    live: bool = False
    sha256: str = ""
    width: int = 0
    height: int = 0
    at: datetime | None = None
    error: str = ""


def desktop_holder(agent: Agent) -> DesktopTakeover | None:
    return DesktopTakeover.objects.filter(agent=agent).first()


def desktop_view(agent: Agent) -> DesktopView:
    raw = redis_client().get(latest_key(str(agent.id)))
    if raw is None:
        return DesktopView(known=False)
    try:
        state: dict[str, Any] = json.loads(raw)
    except ValueError:
        return DesktopView(known=False)
    digest = str(state.get("sha256") or "")
    return DesktopView(
        known=True,
        live=bool(state.get("live")),
        sha256=digest if _DIGEST.fullmatch(digest) else "",
        width=int(state.get("width") or 0),
        height=int(state.get("height") or 0),
        at=datetime.fromtimestamp(float(state.get("at") or 0), tz=UTC),
        error=str(state.get("error") or ""),
    )


def desktop_picture(agent: Agent, sha256: str) -> bytes | None:
    """The kept picture with this digest, given out only when its bytes have it."""
    if not _DIGEST.fullmatch(sha256):
        return None
    data = redis_client().get(picture_key(str(agent.id), sha256))
    if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != sha256:
        return None
    return data
