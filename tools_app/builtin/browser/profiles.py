"""An agent's browser profile between its calls (``browser.profile: per_agent_session``).

Each browser call still starts a fresh Chromium in a fresh sandbox; with this setting
the agent's profile (cookies, local storage, IndexedDB; caches left out) travels with
the call: the worker hands the packed profile to the driver on its input, the driver
unpacks it in the sandbox's private ``/tmp`` (checking every entry), and packs it again
after closing the browser cleanly. Between calls it waits in Redis, where every worker
of every machine finds it, sealed (Fernet) under a key derived from the console's
secret key and the agent, so neither Redis nor its dumps show a cookie.

The session ends, and its profile with it, ``session_idle_seconds`` after the agent's
last browser call (the key's time to live, renewed at each), ``session_max_seconds``
after its first, when the agent is switched off, or when a packed profile passes
``profile_max_mb``. Calls of one agent at once each start from the profile as last kept;
the one that ends last is kept.
"""

from __future__ import annotations

import base64
import time
from typing import Final

import structlog
from cryptography.fernet import Fernet, InvalidToken
from django.utils.crypto import salted_hmac

from common.config.browser import BrowserSection
from common.platform.redis import redis_client

log = structlog.get_logger("synthorg.browser")

PROFILE_PREFIX: Final = "synthorg:browser-profile:"
KEY_SALT: Final = "tools_app.builtin.browser.profiles"
# The driver actions that start a browser on the agent's profile (a mockup never does).
PROFILE_ACTIONS: Final = frozenset({"navigate", "screenshot", "accessibility_scan", "spec"})


def _key(agent_id: str) -> str:
    return f"{PROFILE_PREFIX}{agent_id}"


def _sealer(agent_id: str) -> Fernet:
    digest = salted_hmac(KEY_SALT, f"browser-profile:{agent_id}", algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def profile_load(agent_id: str, section: BrowserSection) -> bytes:
    """The agent's packed profile, or nothing (a new session) when none is kept, the
    session is older than ``session_max_seconds``, or it cannot be read (said in the log)."""
    try:
        kept = redis_client().hgetall(_key(agent_id))
    except Exception as exc:  # the call runs on a fresh profile
        log.warning("browser_profile_not_read", agent=agent_id, error=str(exc))
        return b""
    if not kept:
        return b""
    try:
        started = float(kept[b"started"])
        sealed = kept[b"profile"]
    except (KeyError, ValueError):
        profile_end(agent_id)
        return b""
    if time.time() - started > section.session_max_seconds:
        log.info("browser_profile_aged", agent=agent_id)
        profile_end(agent_id)
        return b""
    try:
        return _sealer(agent_id).decrypt(sealed) if sealed else b""
    except InvalidToken:
        log.warning("browser_profile_unsealed", agent=agent_id)
        profile_end(agent_id)
        return b""


def profile_keep(agent_id: str, section: BrowserSection, packed: bytes | None) -> None:
    """Keep the profile a call ended with (``None``: the call kept none, the session's
    profile stays as it was); the session's idle time starts again."""
    client = redis_client()
    key = _key(agent_id)
    try:
        if packed is None:
            client.expire(key, section.session_idle_seconds)
            return
        pipe = client.pipeline()
        pipe.hsetnx(key, "started", repr(time.time()))
        pipe.hset(key, "profile", _sealer(agent_id).encrypt(packed))
        pipe.expire(key, section.session_idle_seconds)
        pipe.execute()
    except Exception as exc:  # the next call starts afresh
        log.warning("browser_profile_not_kept", agent=agent_id, error=str(exc))


def profile_end(agent_id: str) -> None:
    """End the agent's browser session: its profile is removed."""
    try:
        redis_client().delete(_key(agent_id))
    except Exception as exc:  # it lapses after session_idle_seconds
        log.warning("browser_profile_not_removed", agent=agent_id, error=str(exc))
