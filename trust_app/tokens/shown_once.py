"""A new token's plaintext, kept between the POST that issues it and the one GET that shows it.

The issuing POST redirects (POST-redirect-GET), so a reload of the page that shows the
token repeats the GET, never the POST: no second token is issued. The plaintext waits in
Redis for that one GET, which takes it with a single GETDEL: of several GETs at once
(tabs, a replayed request) exactly one receives it. A session read and saved by each
request could not promise that: every request that loaded the session before the first
one saved it would see the token too.

Whoever reads Redis must not read the token: it is sealed (Fernet) under a key derived
from the session cookie's value, which neither Redis nor the database holds (see
``synthorg_site.sessions``), and kept under a keyed hash of that value and the agent; it
expires after ``SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.contrib.sessions.backends.base import SessionBase
from django.utils.crypto import salted_hmac

from common.platform.redis import redis_client

KEY_SALT = "trust_app.tokens.shown_once.key"
NAME_SALT = "trust_app.tokens.shown_once.name"
REDIS_PREFIX = "synthorg:token-shown-once:"


@dataclass(frozen=True)
class ShownOnce:
    """What the page shows once: the plaintext and which token of which agent it is."""

    agent_id: str
    token_id: str
    plaintext: str


def _session_key(session: SessionBase) -> str:
    if not session.session_key:
        session.save()  # a key to derive from; a signed-in person always has one
    return str(session.session_key)


def _fernet(session: SessionBase) -> Fernet:
    digest = salted_hmac(KEY_SALT, _session_key(session), algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def waiting_key(session: SessionBase, agent_id: str) -> str:
    """Where the sealed token of ``agent_id`` waits for this session's one GET."""
    name = salted_hmac(NAME_SALT, f"{_session_key(session)}:{agent_id}", algorithm="sha256")
    return REDIS_PREFIX + name.hexdigest()


def token_keep_for_showing(
    session: SessionBase, *, agent_id: str, token_id: str, plaintext: str
) -> None:
    """Keep a new token's plaintext, sealed, for the next GET of its page (replacing any)."""
    sealed = _fernet(session).encrypt(plaintext.encode()).decode()
    kept = json.dumps({"token": token_id, "sealed": sealed})
    # Redis keeps it at least a second; the seal's own age check is the one that counts.
    ttl = max(1, int(settings.SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS))
    redis_client().set(waiting_key(session, agent_id), kept, ex=ttl)


def token_take_for_showing(session: SessionBase, *, agent_id: str) -> ShownOnce | None:
    """The kept token of ``agent_id``, taken out in one step; None once taken or stale."""
    raw: Any = redis_client().getdel(waiting_key(session, agent_id))
    if raw is None:
        return None
    try:
        kept = json.loads(raw)
        token_id = str(kept["token"])
        plaintext = (
            _fernet(session)
            .decrypt(str(kept["sealed"]).encode(), ttl=settings.SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS)
            .decode()
        )
    except (InvalidToken, KeyError, TypeError, ValueError):
        return None
    return ShownOnce(agent_id=agent_id, token_id=token_id, plaintext=plaintext)
