"""PURE: the hash chain that makes the audit log tamper-evident.

Each event's hash covers its own canonical fields and the previous event's hash, so
changing, removing or reordering any row breaks every hash after it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from tools_app.canonical import canonical_json

GENESIS_HASH = "0" * 64

CHAINED_FIELDS = (
    "created_at",
    "kind",
    "actor_type",
    "actor_id",
    "actor_name",
    "agent_id",
    "agent_name",
    "invocation_id",
    "tool",
    "category",
    "action_type",
    "arguments_hash",
    "outcome",
    "status",
    "reason",
    "rule",
    "duration_ms",
    "request_id",
    "data",
)


def event_hash(prev_hash: str, fields: Mapping[str, Any]) -> str:
    body = canonical_json({name: fields.get(name) for name in CHAINED_FIELDS})
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()
