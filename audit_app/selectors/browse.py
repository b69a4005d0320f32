"""Reads that help a person move through the audit log: the values each filter may
take, how many events match, the events either side of one, the newer page, and the
chain's last verification."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from audit_app.keys import audit_keys_configured
from audit_app.models import AuditEvent, AuditVerification, VerificationStatus
from audit_app.selectors.events import EXACT_FILTERS, AuditFilters, audit_events
from audit_app.verify import audit_event_authentic
from common.errors import InvalidArgumentError

_CHOICES_CACHE_KEY = "audit:filter-choices:v1"
# Filters offered as a select (few values); the others get an autocomplete list.
SELECT_FILTERS = ("category", "action_type", "outcome", "status", "kind")
AUTOCOMPLETE_FILTERS = ("agent", "tool", "actor")
# An error lists at most this many of the known values.
CHOICES_NAMED_IN_ERROR = 25


def _choices_from_log() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, field in EXACT_FILTERS.items():
        values = (
            AuditEvent.objects.order_by(field)
            .exclude(**{field: ""})
            .values_list(field, flat=True)
            .distinct()
        )
        found[name] = list(values)
    return found


def audit_filter_choices(*, fresh: bool = False) -> Mapping[str, list[str]]:
    """For each exact filter, the values present in the log (kept briefly in the cache)."""
    if not fresh:
        cached = cache.get(_CHOICES_CACHE_KEY)
        if cached is not None:
            return dict(cached)
    found = _choices_from_log()
    cache.set(_CHOICES_CACHE_KEY, found, settings.SYNTHORG_AUDIT_FILTER_CHOICES_TTL)
    return found


def audit_filter_choices_among(agents: frozenset[str]) -> dict[str, list[str]]:
    """For each exact filter, the values among the events of ``agents`` (ids as text):
    what a reader of some teams only is offered and told of. Read afresh, never cached."""
    events = AuditEvent.objects.filter(agent_id__in=sorted(agents))
    return {
        name: [
            str(value)
            for value in events.exclude(**{field: ""})
            .order_by(field)
            .values_list(field, flat=True)
            .distinct()
        ]
        for name, field in EXACT_FILTERS.items()
    }


def audit_filters_check_known(filters: AuditFilters) -> None:
    """Refuse a filter value that no event has, naming the values that exist (among the
    events the filters' reader may see).

    A value missing from the cached list is looked up afresh before it is refused,
    so an event written a moment ago can be filtered for at once.
    """
    agents = filters.agents
    choices = audit_filter_choices() if agents is None else audit_filter_choices_among(agents)
    for fresh in (False, True):
        unknown = [
            name
            for name in EXACT_FILTERS
            if getattr(filters, name) and getattr(filters, name) not in choices.get(name, [])
        ]
        if not unknown:
            return
        if not fresh and agents is None:
            choices = audit_filter_choices(fresh=True)
    name = unknown[0]
    known = choices.get(name, [])
    listed = ", ".join(known[:CHOICES_NAMED_IN_ERROR]) or "none yet"
    more = (
        f" and {len(known) - CHOICES_NAMED_IN_ERROR} more"
        if len(known) > CHOICES_NAMED_IN_ERROR
        else ""
    )
    raise InvalidArgumentError(
        f"{name}: no event has {getattr(filters, name)!r} (names are exact); "
        f"the log holds: {listed}{more}",
        details={"field": name, "expected": "a value the log holds"},
    )


@dataclass(frozen=True)
class MatchCount:
    count: int
    more: bool  # True when the count stopped at the limit

    def __str__(self) -> str:
        return f"more than {self.count:,}" if self.more else f"{self.count:,}"


def audit_match_count(filters: AuditFilters) -> MatchCount:
    """How many events match, counted up to SYNTHORG_AUDIT_COUNT_LIMIT."""
    limit = settings.SYNTHORG_AUDIT_COUNT_LIMIT
    counted = audit_events(filters).order_by()[: limit + 1].count()
    return MatchCount(min(counted, limit), counted > limit)


def audit_newer_page(
    filters: AuditFilters, *, newer_than: int, size: int
) -> tuple[list[AuditEvent], bool]:
    """The `size` matching events just above `newer_than`, newest first, and whether
    still newer ones exist."""
    rows = list(
        audit_events(filters).filter(id__gt=newer_than).order_by("id").defer("data")[: size + 1]
    )
    more = len(rows) > size
    return list(reversed(rows[:size])), more


def audit_has_newer(filters: AuditFilters, event_id: int) -> bool:
    return audit_events(filters).filter(id__gt=event_id).exists()


def audit_has_older(filters: AuditFilters, event_id: int) -> bool:
    return audit_events(filters).filter(id__lt=event_id).exists()


def audit_event_neighbours(
    event_id: int, *, agents: frozenset[str] | None = None
) -> tuple[int | None, int | None]:
    """The ids of the events just before and just after `event_id` in the log (among the
    events of ``agents`` when named)."""
    events = AuditEvent.objects.all()
    if agents is not None:
        events = events.filter(agent_id__in=sorted(agents))
    before = events.filter(id__lt=event_id).order_by("-id").values_list("id", flat=True)
    after = events.filter(id__gt=event_id).order_by("id").values_list("id", flat=True)
    return before.first(), after.first()


# The event each verification's result is recorded as (services/verification.py).
AUDIT_VERIFIED = "audit.verified"


@dataclass(frozen=True)
class VerificationResult:
    """A verification's result as its keyed `audit.verified` event records it."""

    verification: int
    status: str  # passed or failed
    finished_at: datetime
    requested_by: str
    checked: int
    checkpoints: int
    first_bad_event: int | None
    summary: str
    event_id: int

    @classmethod
    def from_event(cls, event: AuditEvent) -> VerificationResult:
        data = event.data if isinstance(event.data, dict) else {}
        return cls(
            verification=int(data.get("verification") or 0),
            status=event.outcome,
            finished_at=event.created_at,
            requested_by=str(data.get("requested_by", "")),
            checked=int(data.get("checked") or 0),
            checkpoints=int(data.get("checkpoints") or 0),
            first_bad_event=data.get("first_bad_event"),
            summary=event.reason,
            event_id=event.id,
        )


@dataclass(frozen=True)
class ChainStatus:
    last: VerificationResult | None  # the newest result, from its authentic audit event
    current: AuditVerification | None  # one queued or running now
    abandoned: AuditVerification | None = None  # the newest run that stopped without a result
    # Why the shown status cannot be trusted: the status table disagrees with the audit log,
    # or the newest result's event does not verify. None when nothing is amiss.
    untrusted: str | None = None


def _last_result() -> tuple[VerificationResult | None, str | None]:
    """The newest result, read from the newest `audit.verified` event (keyed: a database
    writer without the key cannot forge one), never from the status table alone."""
    head = AuditEvent.objects.order_by("-id").values_list("id", "key_id").first()
    if head is not None and not head[1] and audit_keys_configured():
        return None, (
            f"the newest audit event, #{head[0]}, is unkeyed (plain SHA-256, no key id) "
            "although an audit key is configured: the log was re-hashed without the key (a "
            "downgrade) or comes from a version without audit keys, and nothing more is "
            "recorded until it is checked. Run `manage.py synthorg_audit verify`; if the "
            "unkeyed events are genuine history, `manage.py synthorg_audit start-keyed`"
        )
    event = AuditEvent.objects.filter(kind=AUDIT_VERIFIED).order_by("-id").first()
    if event is not None and not audit_event_authentic(event):
        return None, (
            f"the newest verification result, audit event #{event.id}, does not verify "
            "under the audit keys (it was written or changed without the key): the chain's "
            "status is unknown, verify it again"
        )
    result = VerificationResult.from_event(event) if event is not None else None
    row = (
        AuditVerification.objects.filter(
            status__in=(VerificationStatus.PASSED, VerificationStatus.FAILED)
        )
        .order_by("-id")
        .first()
    )
    backed = (
        row is None
        or (result is not None and row.id <= result.verification)
        or AuditEvent.objects.filter(
            kind=AUDIT_VERIFIED, data__verification=row.id, outcome=row.status
        ).exists()
    )
    if row is not None and not backed:
        return result, (
            f"the status table holds verification #{row.id} as {row.status}, but no audit "
            "event records that result: the table was changed outside the console, so it is "
            "not shown; verify the chain again"
        )
    return result, None


def audit_chain_status() -> ChainStatus:
    # A run older than its time limit died with its worker: it is no longer shown as current.
    recent = timezone.now() - timedelta(seconds=settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT)
    # The run in progress is read before the newest result: a run that ends between the
    # two reads is then seen as one or the other (its result is committed before it stops
    # being current), never as neither. The other order once showed a run that took
    # 14 ms as "not verified", and the panel stopped following it.
    current = (
        AuditVerification.objects.filter(
            status__in=(VerificationStatus.QUEUED, VerificationStatus.RUNNING),
            requested_at__gte=recent,
        )
        .order_by("-id")
        .first()
    )
    last, untrusted = _last_result()
    abandoned = (
        AuditVerification.objects.filter(status=VerificationStatus.ABANDONED)
        .filter(id__gt=last.verification if last is not None else 0)
        .order_by("-id")
        .first()
    )
    return ChainStatus(last, current, abandoned, untrusted)
