"""PURE: the signature a webhook receiver checks (HMAC-SHA256, with a timestamp).

The header is ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">``; binding
the time into the signature lets a receiver refuse replays older than it allows.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-SynthOrg-Signature"


def sign(key: str, body: bytes, timestamp: int) -> str:
    digest = hmac.new(key.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(key: str, body: bytes, header: str, *, now: int, tolerance: int = 300) -> bool:
    """What a receiver does: parse the header, check the time window, compare in constant time."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    given = f"t={timestamp},v1={parts.get('v1', '')}"
    return hmac.compare_digest(sign(key, body, timestamp), given)
