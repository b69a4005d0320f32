"""PURE: one spelling per JSON value, and the hash that binds decisions to arguments."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, non-ASCII kept, no NaN: one spelling per value."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=str,
    )


def arguments_hash(arguments: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of a call's arguments."""
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()
