"""When failed sign-ins lock and for how long (pure)."""

from __future__ import annotations

from trust_app.signin.rules import (
    LockScope,
    SigninLimits,
    SigninLock,
    lock_seconds,
    locks_due,
    longest,
)

LIMITS = SigninLimits(
    account_failures=5, address_failures=20, window_seconds=900, lock_seconds=60,
    lock_max_seconds=900,
)  # fmt: skip


def test_each_lock_doubles_the_last_up_to_the_longest() -> None:
    lengths = [lock_seconds(LIMITS, locks_before=n) for n in range(7)]
    assert lengths == [60, 120, 240, 480, 900, 900, 900]
    assert lock_seconds(LIMITS, locks_before=10_000) == 900


def test_each_count_locks_at_its_own_limit() -> None:
    assert locks_due(LIMITS, {LockScope.ACCOUNT: 4, LockScope.ADDRESS: 19}) == []
    assert locks_due(LIMITS, {LockScope.ACCOUNT: 5, LockScope.ADDRESS: 5}) == [LockScope.ACCOUNT]
    assert locks_due(LIMITS, {LockScope.ACCOUNT: 1, LockScope.ADDRESS: 20}) == [LockScope.ADDRESS]


def test_the_longest_lock_is_the_one_shown() -> None:
    locks = [SigninLock(LockScope.ACCOUNT, 30), SigninLock(LockScope.ADDRESS, 90)]
    assert longest(locks) == locks[1]
    assert longest([]) is None
