"""Who sent a refused request, and its audit (never letting the audit change the answer)."""

from __future__ import annotations

from typing import Any

import structlog
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user
from django.http import HttpRequest

from audit_app.refusals import RefusedRequest, request_refusal_record
from trust_app.auth import agent_for_token, bearer_token, person_for_token
from trust_app.tokens.bearer import token_kind

log = structlog.get_logger(__name__)


def _address(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "")


def _caller(request: HttpRequest) -> tuple[Any | None, Any | None]:
    """(agent, person) behind a request, from what the request already knows or its token."""
    user = request.__dict__.get("user")  # set by the auth middleware, when it ran
    if user is not None and getattr(user, "is_authenticated", False):
        agent = getattr(user, "agent", None)
        return (agent, None) if agent is not None else (None, user)
    token = bearer_token(request)
    if token is None:
        # DRF forgets the session's person when it refuses the request (a failed
        # CSRF check): the session still says who it was.
        if hasattr(request, "session"):
            person = get_user(request)
            if person.is_authenticated:
                return None, person
        return None, None
    kind = token_kind(token)
    if kind == "agent":
        return agent_for_token(token), None
    if kind == "person":
        return None, person_for_token(token)
    return None, None


def refusal_audit(
    request: HttpRequest,
    *,
    status: int,
    code: str,
    message: str,
    agent: Any | None = None,
    person: Any | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Audit a refusal the HTTP layer answered; a failure to audit is logged, not raised."""
    try:
        if agent is None and person is None:
            agent, person = _caller(request)
        request_refusal_record(
            refused=RefusedRequest(
                method=request.method or "",
                path=request.path,
                status=status,
                code=code,
                message=message,
                address=_address(request),
                agent=agent,
                person=person,
                extra=extra,
            )
        )
    except Exception:
        log.error("request_refusal.audit_failed", path=request.path, status=status, exc_info=True)


async def refusal_audit_async(request: HttpRequest, **kwargs: Any) -> None:
    await sync_to_async(refusal_audit)(request, **kwargs)
