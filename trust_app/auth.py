"""Who is calling: agent tokens for the agent API, sessions or personal tokens for people."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from common.platform.middleware import SyncAsyncMiddleware
from common.platform.outage import outage_response
from trust_app.models import Agent, AgentToken, PersonToken
from trust_app.tokens.bearer import token_digest, token_kind
from trust_app.tokens.life import Scope, TokenRefusal, TokenState, token_refusal
from trust_app.tokens.lookup import FoundToken, find_agent_token

# Writing last_used_at on every request would turn each read into a write; a
# minute's resolution is plenty to tell a live token from a forgotten one.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def bearer_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def _touch(model: type[Any], token: Any) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        model.objects.filter(pk=token.pk).update(last_used_at=now)


UNKNOWN_AGENT_TOKEN = TokenRefusal(
    401, "unauthenticated", "the agent token is unknown (never issued, or mistyped)", "unknown"
)


@dataclass(frozen=True)
class TokenVerdict:
    """An agent token presented at one door: its agent, or why it is refused."""

    agent: Agent | None
    refusal: TokenRefusal | None
    public_id: str = ""


def _state(found: FoundToken) -> TokenState:
    token = found.token
    return TokenState(
        public_id=token.public_id,
        scopes=tuple(token.scopes or ()),
        revoked_at=token.revoked_at,
        expires_at=token.expires_at,
        rotated_at=token.rotated_at,
        agent_active=found.agent.active,
    )


def agent_token_verdict(plaintext: str, *, scope: Scope, address: str = "") -> TokenVerdict:
    """Judge an agent token at the door of ``scope``; a token let in is marked used
    (time and client address)."""
    if token_kind(plaintext) != "agent":
        return TokenVerdict(agent=None, refusal=UNKNOWN_AGENT_TOKEN)
    # The agent's permissions come along: every agent call decides with them.
    found = find_agent_token(token_digest(plaintext))
    if found is None:
        return TokenVerdict(agent=None, refusal=UNKNOWN_AGENT_TOKEN)
    now = timezone.now()
    refusal = token_refusal(_state(found), scope=scope, now=now)
    if refusal is not None:
        return TokenVerdict(agent=None, refusal=refusal, public_id=found.token.public_id)
    _mark_used(found, now=now, address=address)
    return TokenVerdict(agent=found.agent, refusal=None, public_id=found.token.public_id)


def _mark_used(found: FoundToken, *, now: datetime, address: str) -> None:
    token = found.token
    address = address[:64]
    stale = token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION
    moved = bool(address) and address != token.last_used_address
    if stale or moved:
        fields: dict[str, Any] = {"last_used_at": now}
        if address:
            fields["last_used_address"] = address
        AgentToken.objects.filter(pk=token.pk).update(**fields)


def agent_for_token(plaintext: str) -> Agent | None:
    """The active agent a live agent token belongs to (whatever its scopes), or None.

    For naming who sent a request; a door judges the token with agent_token_verdict.
    """
    if token_kind(plaintext) != "agent":
        return None
    found = find_agent_token(token_digest(plaintext))
    if found is None:
        return None
    refusal = token_refusal(_state(found), scope=Scope.AGENT_API, now=timezone.now())
    if refusal is not None and refusal.outcome != "out_of_scope":
        return None
    return found.agent


def person_for_token(plaintext: str) -> Any | None:
    """The active person a live personal token belongs to, or None."""
    if token_kind(plaintext) != "person":
        return None
    token = (
        PersonToken.objects.select_related("person")
        .filter(digest=token_digest(plaintext), revoked_at__isnull=True, person__is_active=True)
        .first()
    )
    if token is None:
        return None
    _touch(PersonToken, token)
    return token.person


class PersonTokenMiddleware(SyncAsyncMiddleware):
    """`Authorization: Bearer <personal token>` signs a script in as that person.

    Token requests carry no cookies, so they are exempt from CSRF (API.md: CSRF
    applies to sessions only). Agent tokens are left for the agent API to judge.
    Under ASGI it stays on the event loop and reaches for the database (in a
    thread) only when a personal token has to be looked up.
    """

    def _call(self, request: HttpRequest) -> Any:
        if self._bearer_kind(request) == "person":
            try:
                self._sign_in(request)
            except Exception as exc:
                # Raised here, before any view: answered here (503 for an outage).
                return _outage_or_raise(request, exc)
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        if self._bearer_kind(request) == "person":
            try:
                await sync_to_async(self._sign_in)(request)
            except Exception as exc:
                return _outage_or_raise(request, exc)
        get_response: Callable[[HttpRequest], Awaitable[HttpResponse]] = self.get_response
        return await get_response(request)

    @staticmethod
    def _bearer_kind(request: HttpRequest) -> str | None:
        plaintext = bearer_token(request)
        if plaintext is None:
            return None
        kind = token_kind(plaintext)
        request.bearer_kind = kind  # type: ignore[attr-defined]
        return kind

    @staticmethod
    def _sign_in(request: HttpRequest) -> None:
        plaintext = bearer_token(request)
        person = person_for_token(plaintext) if plaintext is not None else None
        if person is not None:
            request.user = person
            request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]


def _outage_or_raise(request: HttpRequest, exc: Exception) -> HttpResponse:
    """The 503 an outage (database or Redis away) is answered with; anything else is
    raised again as it was."""
    response = outage_response(request.path, exc)
    if response is None:
        raise exc
    return response
