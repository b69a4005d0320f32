"""Web push: the console's VAPID key, and which subscription endpoints it posts to.

The key pair identifies the console to push services (VAPID, RFC 8292). It is made
the first time it is needed and kept in a private key file under ``var/`` (first
writer wins, so two processes agree on one key); a browser subscribes with its public
half. A subscription's endpoint is a URL the console will post to, so only the push
services a channel names are accepted (plain http only to a host named with its port,
a receiver of one's own).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Final

from cryptography.hazmat.primitives import serialization
from django.conf import settings
from py_vapid import Vapid

from common.platform.key_files import ensure_key_file, read_key_lines
from common.platform.private_state import private_dir
from notifications_app.hosts import url_on_hosts

KEY_FILE_NAME: Final = "vapid-private.pem"
# What a browser's subscription keys look like (base64url of 65 and 16 bytes).
P256DH_BYTES: Final = 65
AUTH_BYTES: Final = 16


class PushSubscriptionRefused(Exception):
    """A subscription the console will not keep; the text says why."""


def key_file() -> Path:
    configured = getattr(settings, "SYNTHORG_PUSH_VAPID_KEY_FILE", None)
    if configured:
        return Path(configured)
    return private_dir(Path(settings.VAR_DIR) / "push") / KEY_FILE_NAME


def _new_key_lines() -> list[str]:
    vapid = Vapid()
    vapid.generate_keys()
    return vapid.private_pem().decode().strip().splitlines()


def vapid_key() -> Vapid:
    """The console's VAPID key (made on first use)."""
    path = key_file()
    ensure_key_file(path, _new_key_lines)
    return Vapid.from_pem("\n".join(read_key_lines(path)).encode() + b"\n")


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def application_server_key() -> str:
    """The public half a browser subscribes with (base64url, uncompressed P-256 point)."""
    public = vapid_key().public_key
    raw = public.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return b64url(raw)


def endpoint_allowed(url: str, hosts: tuple[str, ...]) -> bool:
    """``url`` is on one of the push services' ``hosts`` (``*.domain`` allowed)."""
    return url_on_hosts(url, hosts, wildcards=True)


def checked_subscription(data: object, hosts: tuple[str, ...]) -> tuple[str, str, str]:
    """``(endpoint, p256dh, auth)`` of a browser's ``PushSubscription.toJSON()``."""
    if not isinstance(data, dict) or not isinstance(data.get("keys"), dict):
        raise PushSubscriptionRefused("send the browser's subscription: {endpoint, keys}")
    endpoint, keys = data.get("endpoint"), data["keys"]
    if not isinstance(endpoint, str) or len(endpoint) > 1000:
        raise PushSubscriptionRefused("endpoint must be a URL of at most 1000 characters")
    if not endpoint_allowed(endpoint, hosts):
        raise PushSubscriptionRefused(
            "endpoint is not on a push service this console posts to (notifications "
            "channel endpoint_hosts)"
        )
    p256dh, auth = keys.get("p256dh"), keys.get("auth")
    for name, value, size in (("p256dh", p256dh, P256DH_BYTES), ("auth", auth, AUTH_BYTES)):
        try:
            ok = isinstance(value, str) and len(_b64url_decode(value)) == size
        except ValueError:
            ok = False
        if not ok:
            raise PushSubscriptionRefused(f"keys.{name} must be {size} bytes in base64url")
    return endpoint, str(p256dh), str(auth)
