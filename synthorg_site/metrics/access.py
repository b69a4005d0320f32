"""Who may scrape: a bearer token carrying the ``metrics`` scope, or loopback."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import HttpRequest

from trust_app.auth import bearer_token

WHAT_IS_ALLOWED = (
    "GET /metrics takes Authorization: Bearer <token with the metrics scope>, "
    "or a request from loopback"
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
    return token_refusal(token)


def token_refusal(token: str) -> ScrapeRefusal | None:
    """Until tokens carry scopes, no token may scrape."""
    return ScrapeRefusal(403, "forbidden", f"this token has no metrics scope; {WHAT_IS_ALLOWED}")
