"""PURE: the keyed hash chain that makes the audit log tamper-evident.

Each event's hash covers its own canonical fields and the previous event's hash, so
changing, removing or reordering any row breaks every hash after it. Since the chain
was keyed, each hash is an HMAC-SHA256 under an audit key held outside the database
(the key's id is stored on the event and covered by the MAC): someone who can write
the database but does not hold a key cannot recompute the hashes after a row they
changed. Events written before the chain was keyed keep their plain SHA-256 hashes
(an empty key id); the first keyed event, of kind AUDIT_CHAIN_KEYED, marks the switch
(written on an operator's request, `synthorg_audit start-keyed`, never automatically).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from common.canonical import canonical_json

GENESIS_HASH = "0" * 64
# The event that marks where plain SHA-256 hashes end and keyed hashes begin.
AUDIT_CHAIN_KEYED = "audit.chain_keyed"
AUDIT_KEY_ROTATED = "audit.key_rotated"

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

KEY_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,40}$")
MIN_KEY_CHARS = 32
# What a refusal of a malformed key list tells the operator to write instead.
AUDIT_KEYS_FORM = (
    "Allowed form: comma-separated ID:SECRET entries, newest first, each ID 1-40 letters, "
    f"digits, '.', '_' or '-' and each SECRET at least {MIN_KEY_CHARS} characters "
    "(`manage.py synthorg_audit new-key` prints one)"
)


class AuditKeyError(Exception):
    """The audit keys cannot be used; the message says which and why (never the key)."""


class AuditChainUnkeyedError(AuditKeyError):
    """The log's newest event is unkeyed: keyed events are not appended to it silently."""


@dataclass(frozen=True)
class AuditKey:
    id: str
    secret: bytes

    def __repr__(self) -> str:  # never print the secret
        return f"AuditKey(id={self.id!r})"


@dataclass(frozen=True)
class AuditKeyRing:
    """Audit keys, newest first: new events are keyed with the first, any verifies."""

    keys: tuple[AuditKey, ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise AuditKeyError("no audit key is configured")
        ids = [key.id for key in self.keys]
        if len(set(ids)) != len(ids):
            raise AuditKeyError("two audit keys share an id: each key needs an id of its own")

    @property
    def newest(self) -> AuditKey:
        return self.keys[0]

    def get(self, key_id: str) -> AuditKey | None:
        return next((key for key in self.keys if key.id == key_id), None)

    @classmethod
    def parse(cls, entries: Sequence[str], *, source: str) -> AuditKeyRing:
        """Keys written `ID:SECRET`, newest first; blank entries are skipped."""
        keys = []
        for position, entry in enumerate((e.strip() for e in entries if e.strip()), start=1):
            key_id, sep, secret = entry.partition(":")
            if not sep or not KEY_ID_PATTERN.match(key_id):
                raise AuditKeyError(
                    f"{source}: entry {position} is not ID:SECRET with an id of letters, "
                    "digits, '.', '_' or '-' (at most 40)"
                )
            if len(secret) < MIN_KEY_CHARS:
                raise AuditKeyError(
                    f"{source}: key {key_id!r} is shorter than {MIN_KEY_CHARS} characters"
                )
            keys.append(AuditKey(key_id, secret.encode()))
        return cls(tuple(keys))

    def lines(self) -> list[str]:
        return [f"{key.id}:{key.secret.decode()}" for key in self.keys]


def new_audit_key(now: datetime | None = None) -> AuditKey:
    """A fresh random key, named by the time it was made (ids sort by age)."""
    moment = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S")
    return AuditKey(f"ak{moment}-{secrets.token_hex(2)}", secrets.token_urlsafe(32).encode())


def _body(fields: Mapping[str, Any]) -> str:
    return canonical_json({name: fields.get(name) for name in CHAINED_FIELDS})


def event_hash(prev_hash: str, fields: Mapping[str, Any]) -> str:
    """The plain SHA-256 hash of events written before the chain was keyed."""
    return hashlib.sha256(f"{prev_hash}\n{_body(fields)}".encode()).hexdigest()


def keyed_event_hash(key: AuditKey, prev_hash: str, fields: Mapping[str, Any]) -> str:
    """HMAC-SHA256 under `key` of the previous hash, the key id and the event's fields."""
    message = f"{prev_hash}\n{key.id}\n{_body(fields)}".encode()
    return hmac.new(key.secret, message, hashlib.sha256).hexdigest()


def hashes_equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


@dataclass(frozen=True)
class Checkpoint:
    """The chain's head at one moment: its id and hash, how many events, and when."""

    head_id: int
    head_hash: str
    count: int
    created_at: str  # ISO 8601, UTC
    key_id: str

    def signed_body(self) -> str:
        return canonical_json(
            {
                "version": 1,
                "head_id": self.head_id,
                "head_hash": self.head_hash,
                "count": self.count,
                "created_at": self.created_at,
                "key_id": self.key_id,
            }
        )


def checkpoint_signature(key: AuditKey, checkpoint: Checkpoint) -> str:
    body = f"synthorg-audit-checkpoint\n{checkpoint.signed_body()}".encode()
    return hmac.new(key.secret, body, hashlib.sha256).hexdigest()
