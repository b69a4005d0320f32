"""The sign-in counts and locks, in Redis: shared by every web node, gone when they expire.

Keys hold a SHA-256 of what they count (an account name and an address, or an
address), never the name itself: the keys list no accounts.
"""

from __future__ import annotations

import hashlib

from django.conf import settings

from common.platform.redis import redis_client
from trust_app.signin.rules import (
    LockScope,
    SigninLimits,
    SigninLock,
    lock_memory_seconds,
    lock_seconds,
)

_PREFIX = "synthorg:signin"


def signin_limits() -> SigninLimits:
    return SigninLimits(
        account_failures=settings.SYNTHORG_SIGNIN_ACCOUNT_FAILURES,
        address_failures=settings.SYNTHORG_SIGNIN_ADDRESS_FAILURES,
        window_seconds=settings.SYNTHORG_SIGNIN_WINDOW_SECONDS,
        lock_seconds=settings.SYNTHORG_SIGNIN_LOCK_SECONDS,
        lock_max_seconds=settings.SYNTHORG_SIGNIN_LOCK_MAX_SECONDS,
    )


def _subject(scope: LockScope, *, username: str, address: str) -> str:
    what = f"{username}\n{address}" if scope is LockScope.ACCOUNT else address
    return hashlib.sha256(what.encode("utf-8", "surrogatepass")).hexdigest()


def _key(kind: str, scope: LockScope, subject: str) -> str:
    return f"{_PREFIX}:{kind}:{scope.value}:{subject}"


def _subjects(*, username: str, address: str) -> dict[LockScope, str]:
    return {scope: _subject(scope, username=username, address=address) for scope in LockScope}


def locks_in_force(*, username: str, address: str) -> list[SigninLock]:
    """The locks that cover a sign-in to ``username`` from ``address`` now."""
    subjects = _subjects(username=username, address=address)
    pipe = redis_client().pipeline()
    for scope, subject in subjects.items():
        pipe.pttl(_key("lock", scope, subject))
    left = pipe.execute()
    return [
        SigninLock(scope=scope, seconds=max(1, -(-int(ms) // 1000)))
        for scope, ms in zip(subjects, left, strict=True)
        if int(ms) > 0
    ]


def failure_count(*, username: str, address: str, limits: SigninLimits) -> dict[LockScope, int]:
    """Count one failure in each count; each count's window starts at its first failure."""
    subjects = _subjects(username=username, address=address)
    pipe = redis_client().pipeline()
    for scope, subject in subjects.items():
        key = _key("failures", scope, subject)
        pipe.set(key, 0, ex=limits.window_seconds, nx=True)  # INCR keeps the expiry
        pipe.incr(key)
    counts = pipe.execute()[1::2]
    return {scope: int(count) for scope, count in zip(subjects, counts, strict=True)}


def lock(
    scope: LockScope, *, username: str, address: str, limits: SigninLimits
) -> SigninLock | None:
    """Lock ``scope`` for as long as its recent locks say; None when another request
    locked it first. Its failure count starts again for after the lock."""
    subject = _subject(scope, username=username, address=address)
    client = redis_client()
    locks_key = _key("locks", scope, subject)
    seconds = lock_seconds(limits, locks_before=int(client.get(locks_key) or 0))
    if not client.set(_key("lock", scope, subject), seconds, ex=seconds, nx=True):
        return None
    pipe = client.pipeline()
    pipe.incr(locks_key)
    pipe.expire(locks_key, lock_memory_seconds(limits, seconds=seconds))
    pipe.delete(_key("failures", scope, subject))
    pipe.execute()
    return SigninLock(scope=scope, seconds=seconds)


def forget_account(*, username: str, address: str) -> None:
    """A person signed in from ``address``: their failures there, and the memory of
    locks, are forgotten. The address's own count stays (one account known to an
    attacker must not clear its guesses at others)."""
    subject = _subject(LockScope.ACCOUNT, username=username, address=address)
    redis_client().delete(
        _key("failures", LockScope.ACCOUNT, subject), _key("locks", LockScope.ACCOUNT, subject)
    )


def unlock(*, username: str | None, address: str | None) -> int:
    """Lift the locks and counts of an account from an address, or of an address (what
    an admin's reset names); how many keys were removed."""
    keys: list[str] = []
    if address is not None and username is not None:
        subject = _subject(LockScope.ACCOUNT, username=username, address=address)
        keys += [_key(kind, LockScope.ACCOUNT, subject) for kind in ("failures", "lock", "locks")]
    if address is not None:
        subject = _subject(LockScope.ADDRESS, username="", address=address)
        keys += [_key(kind, LockScope.ADDRESS, subject) for kind in ("failures", "lock", "locks")]
    return int(redis_client().delete(*keys)) if keys else 0
