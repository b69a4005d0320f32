"""request_refusal_record: the audit of requests refused before any service judged them.

Malformed JSON, oversized bodies, unknown paths, wrong methods or media types,
refused authentication or roles, refused approval decisions: each is one
``request.refused`` event naming the client, the request and the reason. A client
that floods the console with bad requests gets at most
``SYNTHORG_REFUSAL_AUDIT_PER_MINUTE`` events a minute; the rest are counted in
Redis and written as one ``request.refusals_counted`` event per client and
minute by a sweep, so a flood can neither fill the audit log nor hold the
chain's lock.

Failed sign-ins (``signin.failed``) are budgeted the same way, per client address, and
counted in ``signin.failures_counted`` events.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import structlog
from django.conf import settings
from django.db import transaction

from audit_app.models import AuditEvent
from audit_app.record import Actor, audit_record
from common.platform.logs import current_request_id
from common.platform.redis import redis_client

REFUSED_KIND = "request.refused"
COUNTED_KIND = "request.refusals_counted"
SIGNIN_FAILED_KIND = "signin.failed"
SIGNIN_COUNTED_KIND = "signin.failures_counted"
WINDOW_SECONDS = 60
_COUNT_KEY = "synthorg:refusals:{kind}{client}:{window}"


@dataclass(frozen=True)
class _Budget:
    key_part: str  # in the counter's key; empty for refusals, whose keys came first
    counted_kind: str
    what: str


_BUDGETS = {
    REFUSED_KIND: _Budget("", COUNTED_KIND, "refused requests"),
    SIGNIN_FAILED_KIND: _Budget("signin:", SIGNIN_COUNTED_KIND, "failed sign-ins"),
}
_PENDING_KEY = "synthorg:refusals:pending"
# Counters outlive their window long enough for the sweep to read them.
_KEY_TTL_SECONDS = 3600

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RefusedRequest:
    """What the HTTP layer knows about one refused request."""

    method: str
    path: str
    status: int
    code: str
    message: str
    address: str = ""
    agent: Any | None = None
    person: Any | None = None
    extra: dict[str, Any] | None = None
    # request.refused, or signin.failed: each has its own budget per client.
    kind: str = REFUSED_KIND

    @property
    def actor(self) -> Actor:
        if self.agent is not None:
            return Actor.agent(self.agent)
        if self.person is not None:
            return Actor.person(self.person)
        return Actor(type="anonymous", id="", name=self.address or "unknown")

    @property
    def client(self) -> str:
        actor = self.actor
        return f"{actor.type}:{actor.id or actor.name}"


def _already_audited(request_id: str) -> bool:
    """A service that refused this request has written its own refusal event."""
    return bool(request_id) and (
        AuditEvent.objects.filter(request_id=request_id, kind__endswith=".refused").exists()
    )


def _pending_member(window: int, client: str, kind: str) -> str:
    return f"{window}|{client}" if kind == REFUSED_KIND else f"{window}|{client}|{kind}"


def _count(client: str, now: float, kind: str = REFUSED_KIND) -> int:
    """This refusal's number among the client's refusals of its kind in the current window."""
    window = int(now // WINDOW_SECONDS)
    key = _COUNT_KEY.format(kind=_BUDGETS[kind].key_part, client=client, window=window)
    pipe = redis_client().pipeline()
    pipe.incr(key)
    pipe.expire(key, _KEY_TTL_SECONDS)
    number = int(pipe.execute()[0])
    if number == settings.SYNTHORG_REFUSAL_AUDIT_PER_MINUTE + 1:
        redis_client().sadd(_PENDING_KEY, _pending_member(window, client, kind))
    return number


def request_refusal_record(*, refused: RefusedRequest, now: float | None = None) -> bool:
    """Audit one refused request; False when it was only counted (a flood) or when
    a service had audited it already."""
    if refused.kind not in _BUDGETS:
        raise ValueError(f"{refused.kind!r} is not a budgeted kind: {sorted(_BUDGETS)}")
    request_id = current_request_id() or ""
    if refused.kind == REFUSED_KIND and _already_audited(request_id):
        return False
    try:
        number = _count(refused.client, time.time() if now is None else now, refused.kind)
    except Exception:  # Redis down: audit every refusal rather than none
        log.warning("request_refusal.count_failed", exc_info=True)
        number = 1
    budget = settings.SYNTHORG_REFUSAL_AUDIT_PER_MINUTE
    if number > budget:
        if number == budget + 1:  # one line per client and minute, not one per request
            log.warning(
                "request_refusal.flood",
                client=refused.client,
                kind=refused.kind,
                budget_per_minute=budget,
            )
        return False
    log.info(
        refused.kind,
        client=refused.client,
        method=refused.method,
        path=refused.path[:200],
        status=refused.status,
        code=refused.code,
    )
    with transaction.atomic():
        audit_record(
            kind=refused.kind,
            actor=refused.actor,
            agent=refused.agent,
            outcome=refused.code,
            status=str(refused.status),
            reason=refused.message[:2000],
            data={
                "method": refused.method,
                "path": refused.path[:500],
                "client": refused.client,
                "address": refused.address,
                **(refused.extra or {}),
            },
        )
    return True


def request_refusals_summarise(*, now: float | None = None) -> int:
    """Write one event per client and ended minute counting the refusals not audited
    one by one; returns how many events were written."""
    current = int((time.time() if now is None else now) // WINDOW_SECONDS)
    client_redis = redis_client()
    written = 0
    for member in sorted(_text(m) for m in client_redis.smembers(_PENDING_KEY)):
        window_text, _, rest = member.partition("|")
        client, separator, of_kind = rest.rpartition("|")
        if not separator:
            client, of_kind = rest, REFUSED_KIND
        window = int(window_text)
        if window >= current:
            continue  # the minute is still running
        budget = _BUDGETS.get(of_kind, _BUDGETS[REFUSED_KIND])
        key = _COUNT_KEY.format(kind=budget.key_part, client=client, window=window)
        total = int(client_redis.get(key) or 0)
        beyond = total - settings.SYNTHORG_REFUSAL_AUDIT_PER_MINUTE
        if beyond > 0:
            kind, _, name = client.partition(":")
            with transaction.atomic():
                audit_record(
                    kind=budget.counted_kind,
                    actor=Actor(type="system", id="", name="refusal counter"),
                    outcome="counted",
                    reason=(
                        f"{beyond} more {budget.what} from {client} in the minute from "
                        f"{_iso_minute(window)}"
                    ),
                    data={
                        "client": client,
                        "client_type": kind,
                        "client_name": name,
                        "window_start": window * WINDOW_SECONDS,
                        "counted": beyond,
                        "total": total,
                    },
                )
            written += 1
        client_redis.srem(_PENDING_KEY, member)
        client_redis.delete(key)
    return written


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _iso_minute(window: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(window * WINDOW_SECONDS))
