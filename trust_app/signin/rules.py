"""When failed sign-ins lock, and for how long. Pure: no Django imports.

Two counts are kept, each over a window: failures for one account from one address,
and failures from one address for any account. Locks are never on an account alone,
so nobody can lock a person out from where they are: an attacker locks the addresses
it sends from, and the person signs in from theirs. A lock ends by itself; each lock
of the same count within a window of the last one's end lasts twice the one before,
up to a longest lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class LockScope(StrEnum):
    ACCOUNT = "account_from_address"  # one account, from one address
    ADDRESS = "address"  # every account, from one address


@dataclass(frozen=True)
class SigninLimits:
    account_failures: int
    address_failures: int
    window_seconds: int
    lock_seconds: int
    lock_max_seconds: int

    def failures_allowed(self, scope: LockScope) -> int:
        return self.account_failures if scope is LockScope.ACCOUNT else self.address_failures


@dataclass(frozen=True)
class SigninLock:
    """A lock in force: what it covers and the seconds it has left."""

    scope: LockScope
    seconds: int


def lock_seconds(limits: SigninLimits, *, locks_before: int) -> int:
    """The length of a lock that follows ``locks_before`` recent locks of the same count."""
    doublings = min(max(locks_before, 0), 32)
    return min(limits.lock_max_seconds, limits.lock_seconds * 2**doublings)


def lock_memory_seconds(limits: SigninLimits, *, seconds: int) -> int:
    """How long a lock is remembered for the next one's length: its own time, then a window."""
    return seconds + limits.window_seconds


def locks_due(limits: SigninLimits, failures: dict[LockScope, int]) -> list[LockScope]:
    """The counts that reached their limit with this failure."""
    return [scope for scope, count in failures.items() if count >= limits.failures_allowed(scope)]


def longest(locks: list[SigninLock]) -> SigninLock | None:
    return max(locks, key=lambda lock: lock.seconds, default=None)
