"""Bearer tokens: high-entropy secrets shown once, stored only as SHA-256 digests.

A token is `<prefix>_<public id>_<secret>`. The prefix says whose it is (an agent's
or a person's) so a leaked token is recognisable and can be redacted; the public id
is what the console shows to tell tokens apart.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

AGENT_TOKEN_PREFIX = "soa"
PERSON_TOKEN_PREFIX = "sop"
TOKEN_PATTERN = r"\bso[ap]_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{32,}"


@dataclass(frozen=True)
class IssuedToken:
    plaintext: str
    public_id: str
    digest: str


def token_digest(plaintext: str) -> str:
    # The secret carries 256 bits of entropy, so a plain SHA-256 is enough: no
    # dictionary to stretch against, and lookups stay a single index probe.
    return hashlib.sha256(plaintext.encode()).hexdigest()


def issue_token(prefix: str) -> IssuedToken:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    public_id = "".join(secrets.choice(alphabet) for _ in range(8))
    plaintext = f"{prefix}_{public_id}_{secrets.token_urlsafe(32)}"
    return IssuedToken(plaintext=plaintext, public_id=public_id, digest=token_digest(plaintext))


def token_kind(plaintext: str) -> str | None:
    """'agent', 'person' or None, by the token's prefix."""
    head = plaintext.split("_", 1)[0]
    return {AGENT_TOKEN_PREFIX: "agent", PERSON_TOKEN_PREFIX: "person"}.get(head)


def digests_match(a: str, b: str) -> bool:
    return hmac.compare_digest(a, b)
