"""A new token's plaintext, kept between the POST that issues it and the one GET that shows it.

The issuing POST redirects (POST-redirect-GET), so a reload of the page that shows the
token repeats the GET, never the POST: no second token is issued. The plaintext waits in
the person's session for that one GET, which takes it out. Session rows are readable by
whoever reads the database, so it is sealed (Fernet) under a key derived from the session
cookie's value, which the database never holds (see ``synthorg_site.sessions``); it is
also dropped once older than ``SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.contrib.sessions.backends.base import SessionBase
from django.utils.crypto import salted_hmac

SESSION_KEY = "trust_app.tokens.shown_once"
KEY_SALT = "trust_app.tokens.shown_once.key"


@dataclass(frozen=True)
class ShownOnce:
    """What the page shows once: the plaintext and which token of which agent it is."""

    agent_id: str
    token_id: str
    plaintext: str


def _fernet(session: SessionBase) -> Fernet:
    if not session.session_key:
        session.save()  # a key to derive from; a signed-in person always has one
    digest = salted_hmac(KEY_SALT, str(session.session_key), algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def token_keep_for_showing(
    session: SessionBase, *, agent_id: str, token_id: str, plaintext: str
) -> None:
    """Keep a new token's plaintext, sealed, for the next GET of its page (replacing any)."""
    sealed = _fernet(session).encrypt(plaintext.encode()).decode()
    session[SESSION_KEY] = {"agent": agent_id, "token": token_id, "sealed": sealed}


def token_take_for_showing(session: SessionBase, *, agent_id: str) -> ShownOnce | None:
    """The kept token of ``agent_id``, taken out of the session; None once taken or stale."""
    kept: Any = session.get(SESSION_KEY)
    if not isinstance(kept, dict) or kept.get("agent") != agent_id:
        return None
    del session[SESSION_KEY]
    try:
        token_id = str(kept["token"])
        plaintext = (
            _fernet(session)
            .decrypt(str(kept["sealed"]).encode(), ttl=settings.SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS)
            .decode()
        )
    except (InvalidToken, KeyError):
        return None
    return ShownOnce(agent_id=agent_id, token_id=token_id, plaintext=plaintext)
