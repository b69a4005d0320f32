"""The answer to a locked sign-in (``AXES_LOCKOUT_CALLABLE``): the sign-in page, 429,
saying how long to wait; no CAPTCHA, nothing to solve, the lock ends by itself."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from trust_app.signin.handler import LOCK_ATTRIBUTE
from trust_app.signin.rules import LockScope, SigninLock


def signin_locked_response(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """The sign-in page with the lock's reason and length, and ``Retry-After``.

    axes passes (request, original_response, credentials), or (request, credentials)
    from its async path: neither is needed here.
    """
    lock: SigninLock | None = getattr(request, LOCK_ATTRIBUTE, None)
    seconds = lock.seconds if lock is not None else settings.SYNTHORG_SIGNIN_LOCK_SECONDS
    context = {
        "locked_seconds": seconds,
        "locked_address": lock is None or lock.scope is LockScope.ADDRESS,
        "next": request.POST.get("next", "") if request.method == "POST" else "",
    }
    response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response
