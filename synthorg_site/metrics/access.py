"""Who may scrape: a bearer token carrying the ``metrics`` scope, or loopback."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import HttpRequest

from trust_app.auth import agent_token_verdict, bearer_token
from trust_app.tokens.bearer import token_kind
from trust_app.tokens.life import Scope

WHAT_IS_ALLOWED = (
    "GET /metrics takes Authorization: Bearer <token with the metrics scope>, "
    "or a request from loopback that no proxy forwarded"
)


@dataclass(frozen=True)
class ScrapeRefusal:
    status: int
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


def scrape_refusal(request: HttpRequest, *, loopback: bool) -> ScrapeRefusal | None:
    """None when the request may scrape; otherwise why not."""
    token = bearer_token(request)
    if token is None:
        if loopback:
            return None
        return ScrapeRefusal(
            401, "unauthenticated", WHAT_IS_ALLOWED, {"WWW-Authenticate": 'Bearer realm="synthorg"'}
        )
    # A token is judged on its own even from loopback: a bad one is never waved through.
    if token_kind(token) != "agent":
        return ScrapeRefusal(403, "forbidden", f"only agent tokens carry scopes; {WHAT_IS_ALLOWED}")
    verdict = agent_token_verdict(
        token, scope=Scope.METRICS, address=str(request.META.get("REMOTE_ADDR") or "")
    )
    if verdict.refusal is None:
        return None
    return ScrapeRefusal(
        verdict.refusal.status, verdict.refusal.code, f"{verdict.refusal.reason}; {WHAT_IS_ALLOWED}"
    )
