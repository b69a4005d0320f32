"""django-axes, told how the console counts and locks (``AXES_HANDLER``).

axes does the plumbing: its backend, first in ``AUTHENTICATION_BACKENDS``, refuses a
locked sign-in before any password is read; Django's ``user_login_failed`` signal
reaches ``user_login_failed`` here; its middleware turns a lock into the lockout page
(``AXES_LOCKOUT_CALLABLE``). Every form that signs a person in with a password goes
through ``authenticate``, so ``/accounts/login/`` and ``/admin/login/`` are throttled
alike. The counts and locks are the console's (trust_app/signin/rules.py, in Redis).
"""

from __future__ import annotations

from typing import Any

import structlog
from axes.backends import AxesStandaloneBackend
from axes.handlers.base import AbstractAxesHandler, AxesBaseHandler
from axes.helpers import get_client_username
from axes.signals import user_locked_out
from django.http import HttpRequest

from trust_app.signin import store
from trust_app.signin.audit import signin_failure_record, signin_lock_record
from trust_app.signin.rules import SigninLock, locks_due, longest

log = structlog.get_logger(__name__)

# Where the lock that refused a request is kept for the lockout page.
LOCK_ATTRIBUTE = "synthorg_signin_lock"


def signin_client_address(request: HttpRequest) -> str:
    """The address the throttle counts (``AXES_CLIENT_IP_CALLABLE``): the one the ASGI
    layer decided from the peer and trusted proxies, never a header of the client's."""
    return str(request.META.get("REMOTE_ADDR") or "")


def _username(request: HttpRequest, credentials: dict[str, Any] | None) -> str:
    return str(get_client_username(request, credentials) or "")


def _address(request: HttpRequest) -> str:
    return str(getattr(request, "axes_ip_address", "") or "")


class SigninThrottleBackend(AxesStandaloneBackend):
    """axes' backend for password sign-ins over HTTP only.

    Without a request (Django's test client, a management command) or without a
    password (another way of signing in) there is no client to throttle: it steps aside.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None or password is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class SigninThrottleHandler(AbstractAxesHandler, AxesBaseHandler):
    """Counts failures per account from an address and per address; locks, audits."""

    def is_locked(self, request: Any, credentials: dict[str, Any] | None = None) -> bool:
        if request is None:
            return False
        lock = longest(
            store.locks_in_force(
                username=_username(request, credentials), address=_address(request)
            )
        )
        if lock is None:
            return False
        setattr(request, LOCK_ATTRIBUTE, lock)
        return True

    def get_failures(self, request: Any, credentials: dict[str, Any] | None = None) -> int:
        # Locks, not counts, decide here (is_locked); a count is never read on its own.
        return 0

    def user_login_failed(
        self, sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any
    ) -> None:
        if request is None or "username" not in (credentials or {}):
            return  # no client to count, or not a password sign-in
        username, address = _username(request, credentials), _address(request)
        if getattr(request, "axes_locked_out", False):
            # Refused by the backend while locked: no password was read, nothing counts.
            refused_by = getattr(request, LOCK_ATTRIBUTE, None)
            signin_failure_record(
                request, username=username, address=address, refused_by=refused_by
            )
            return
        limits = store.signin_limits()
        failures = store.failure_count(username=username, address=address, limits=limits)
        new_locks: list[SigninLock] = []
        for scope in locks_due(limits, failures):
            lock = store.lock(scope, username=username, address=address, limits=limits)
            if lock is not None:
                new_locks.append(lock)
        lock = longest(new_locks) or longest(
            store.locks_in_force(username=username, address=address)
        )
        for new_lock in new_locks:
            signin_lock_record(request, username=username, address=address, lock=new_lock)
        if lock is not None:
            request.axes_locked_out = True
            request.axes_credentials = credentials
            setattr(request, LOCK_ATTRIBUTE, lock)
            user_locked_out.send("axes", request=request, username=username, ip_address=address)
        signin_failure_record(request, username=username, address=address, locked=lock)

    def user_logged_in(self, sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
        address = _address(request) if request is not None else ""
        if not address:
            return  # signed in without a client (a test client, a command)
        try:
            store.forget_account(username=user.get_username(), address=address)
        except Exception:  # forgetting is a kindness; the sign-in stands
            log.warning("signin.forget_failed", exc_info=True)

    def user_logged_out(self, sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
        return None

    def reset_attempts(
        self,
        *,
        ip_address: str | None = None,
        username: str | None = None,
        ip_or_username: bool = False,
    ) -> int:
        return store.unlock(username=username, address=ip_address)

    # axes calls these when its own tables change; the console keeps nothing there.
    def post_save_access_attempt(self, instance: Any, **kwargs: Any) -> None:
        return None

    def post_delete_access_attempt(self, instance: Any, **kwargs: Any) -> None:
        return None
