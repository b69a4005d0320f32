"""The audit of failed sign-ins and of the locks they cause.

Each failure is a ``signin.failed`` event within the per-client budget that refused
requests have (``SYNTHORG_REFUSAL_AUDIT_PER_MINUTE``): a flood from one address is
written one by one up to the budget and counted in one ``signin.failures_counted``
event a minute beyond it. Locks are few by construction (one per limit reached, each
longer than the last) and each is a ``signin.locked`` event.
"""

from __future__ import annotations

import structlog
from django.db import transaction
from django.http import HttpRequest

from audit_app.record import Actor, audit_record
from audit_app.refusals import SIGNIN_FAILED_KIND, RefusedRequest, request_refusal_record
from trust_app.signin.rules import LockScope, SigninLock

SIGNIN_LOCKED_KIND = "signin.locked"
# The account name as typed is kept for the record, cut to what Django's field holds.
_NAME_CHARS = 150

log = structlog.get_logger(__name__)


def _anonymous(address: str) -> Actor:
    return Actor(type="anonymous", id="", name=address or "unknown")


def signin_failure_record(
    request: HttpRequest,
    *,
    username: str,
    address: str,
    refused_by: SigninLock | None = None,
    locked: SigninLock | None = None,
) -> bool:
    """Audit one failed sign-in (within the client's budget); False when only counted.

    ``refused_by``: the lock that refused it before its password was read; ``locked``:
    the lock in force when its wrong password was answered (the lockout page).
    """
    lock = refused_by or locked
    if refused_by is not None:
        message = (
            f"refused unread: sign-ins {_covering(refused_by)} are locked for "
            f"{refused_by.seconds} s more after too many failures"
        )
    else:
        message = "the username and password did not match an active account"
    return request_refusal_record(
        refused=RefusedRequest(
            kind=SIGNIN_FAILED_KIND,
            method=request.method or "POST",
            path=request.path,
            status=429 if lock is not None else 200,
            code="rate_limited" if refused_by is not None else "unauthenticated",
            message=message,
            address=address,
            extra={
                "username": username[:_NAME_CHARS],
                "password_checked": refused_by is None,
                **({"lock_scope": lock.scope.value, "lock_seconds": lock.seconds} if lock else {}),
            },
        )
    )


def signin_lock_record(
    request: HttpRequest, *, username: str, address: str, lock: SigninLock
) -> None:
    """Audit a lock just set."""
    with transaction.atomic():
        audit_record(
            kind=SIGNIN_LOCKED_KIND,
            actor=_anonymous(address),
            outcome="locked",
            status="429",
            reason=(
                f"sign-ins {_covering(lock)} are refused for {lock.seconds} s after too "
                "many failures"
            ),
            data={
                "path": request.path,
                "address": address,
                "username": username[:_NAME_CHARS],
                "scope": lock.scope.value,
                "seconds": lock.seconds,
            },
        )
    log.warning("signin.locked", scope=lock.scope.value, seconds=lock.seconds, client=address)


def _covering(lock: SigninLock) -> str:
    if lock.scope is LockScope.ADDRESS:
        return "from this address"
    return "to this account from this address"
