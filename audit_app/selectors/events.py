"""Reads of the audit log for the console pages, the audit API and the exports.

Pages are cut by keyset on the event id (``id < cursor``, newest first), never by
OFFSET, so the hundredth page costs what the first does on a table of millions.
Free-text search in reasons is an ``ILIKE`` on PostgreSQL, the form the trigram index
on ``reason`` serves (Django's ``icontains`` there is ``UPPER(reason) LIKE``, which no
index on ``reason`` can answer, so a rare word meant reading the whole table).
"""

from __future__ import annotations

import json
import posixpath
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, time
from typing import Any

from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Count, F, Max, Q, QuerySet, TextField
from django.db.models.functions import Cast, Left
from django.db.models.lookups import IContains
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.http import urlencode

from audit_app.models import AuditEvent, AuditSubject
from audit_app.subjects import SubjectKind, normalise_host, normalise_path
from common.errors import InvalidArgumentError
from tools_app.models import Invocation
from tools_app.sanitize import redact_secrets

PAGE_SIZE_DEFAULT = 50
PAGE_SIZE_MAX = 500
EXPORT_CHUNK_ROWS = 2000
FILTER_MAX_LENGTH = 200
# Cursors are event ids: a bigint column.
CURSOR_MAX = 2**63 - 1
SEARCH_RECENT_IDS = 10_000
SUBJECT_VALUES_LISTED = 20  # a reason search reads at most this many ids in id order

# Query parameter -> the model field it matches exactly (each has an (field, id) index).
EXACT_FILTERS: Mapping[str, str] = {
    "agent": "agent_name",
    "tool": "tool",
    "category": "category",
    "action_type": "action_type",
    "outcome": "outcome",
    "status": "status",
    "actor": "actor_name",
    "kind": "kind",
}

# The columns of the CSV export and the keys of each JSON Lines record, in order.
EXPORT_COLUMNS: tuple[str, ...] = (
    "id",
    "created_at",
    "kind",
    "actor_type",
    "actor_id",
    "actor_name",
    "agent_id",
    "agent_name",
    "invocation_id",
    "tool",
    "category",
    "action_type",
    "arguments_hash",
    "outcome",
    "status",
    "rule",
    "reason",
    "duration_ms",
    "request_id",
    "prev_hash",
    "hash",
)


@dataclass(frozen=True)
class AuditFilters:
    """What a person narrowed the audit log to; empty strings mean "any"."""

    agent: str = ""
    tool: str = ""
    category: str = ""
    action_type: str = ""
    outcome: str = ""
    status: str = ""
    actor: str = ""
    kind: str = ""
    q: str = ""
    invocation: uuid.UUID | None = None
    since: datetime | None = None
    until: datetime | None = None
    # What the call acted on (audit_app.subjects): normalised as the index stores them.
    path: str = ""
    host: str = ""
    program: str = ""
    table: str = ""
    # The agents (ids as text) whose events the reader may see: a person who reads the
    # audit in some teams only; None for every event. Never a query parameter.
    agents: frozenset[str] | None = None

    @property
    def subjects(self) -> dict[str, str]:
        """The argument filters in use, by subject kind."""
        return {kind: getattr(self, kind) for kind in SUBJECT_FILTERS if getattr(self, kind)}

    def as_query(self) -> dict[str, str]:
        """The filters as query parameters (for next-page and export links)."""
        query: dict[str, str] = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if value in ("", None) or spec.name == "agents":
                continue
            query[spec.name] = value.isoformat() if isinstance(value, datetime) else str(value)
        return query

    @property
    def active(self) -> bool:
        return bool(self.as_query())


# How much of a refused value an error quotes back: enough to recognise it.
QUOTED_MAX = 60
# Every query parameter the audit API, page and exports read; any other is refused, so
# a misspelt filter never passes for "no filter" on an auditor's answer.
SUBJECT_FILTERS: tuple[str, ...] = tuple(kind.value for kind in SubjectKind)
KNOWN_PARAMETERS = frozenset(
    {*EXACT_FILTERS, *SUBJECT_FILTERS, "q", "invocation", "since", "until"}
    | {"cursor", "newer", "limit"}
)
SUBJECT_EXPECTED: Mapping[str, str] = {
    "path": "a path, e.g. notes/ (it and everything under it)",
    "host": "a host name or address, e.g. api.example.org",
    "program": "a program name, e.g. git",
    "table": "a table name, e.g. orders or public.orders",
}
# The longest ISO 8601 moment Django reads is 32 characters (microseconds and an offset).
MOMENT_MAX_LENGTH = 40
_MOMENT_FORM = "an ISO 8601 date or date-time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z"
# Characters no host name holds (besides controls): a space, a path, undecodable input.
_NOT_IN_HOSTS = frozenset(" /\ufffd")
# The same rules as JSON Schema patterns, for the API's description.
TEXT_PATTERN = "^[^\\x00-\\x1f\\x7f]*$"
HOST_PATTERN = "^[^\\x00-\\x20\\x7f-\\x9f/\\ufffd]*$"
_CURSOR = re.compile(r"[1-9][0-9]{0,18}")
_COUNT = re.compile(r"[0-9]{1,6}")


def _quoted(raw: str) -> str:
    """`raw` as an error message quotes it: repr, the middle cut when long."""
    if len(raw) > QUOTED_MAX:
        half = QUOTED_MAX // 2
        raw = f"{raw[:half]}…{raw[-half:]} ({len(raw)} characters)"
    return repr(raw)


def _refused(name: str, message: str, expected: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{name}: {message}; expected {expected}",
        details={"field": name, "expected": expected},
    )


def _text_value(name: str, params: Mapping[str, Any], expected: str) -> str:
    """The parameter's text, stripped; refused when too long or holding control characters
    (a NUL cannot reach PostgreSQL as text, the others are never in a name)."""
    raw = str(params.get(name) or "").strip()
    if len(raw) > FILTER_MAX_LENGTH:
        raise _refused(name, f"{len(raw)} characters is too long", expected)
    bad = next((ch for ch in raw if ch < " " or ch == "\x7f"), None)
    if bad is not None:
        raise _refused(name, f"holds the control character U+{ord(bad):04X}", expected)
    return raw


def _moment(name: str, raw: str, *, end_of_day: bool) -> datetime:
    """`raw` as an aware datetime in UTC; an impossible date (2026-02-30) is refused like
    a malformed one."""
    if len(raw) > MOMENT_MAX_LENGTH:
        raise _refused(name, f"{_quoted(raw)} is too long to be a date", _MOMENT_FORM)
    try:
        moment = parse_datetime(raw)
        if moment is None:
            day: date | None = parse_date(raw)
            if day is None:
                raise _refused(name, f"{_quoted(raw)} is not a date", _MOMENT_FORM)
            moment = datetime.combine(day, time.max if end_of_day else time.min)
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment, timezone.get_default_timezone())
    except ValueError as exc:
        raise _refused(name, f"{_quoted(raw)} is not a real moment ({exc})", _MOMENT_FORM) from None
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        # Before year 1 or after 9999 once in UTC: the first or last moment there is.
        edge = datetime.min if moment.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)


def audit_filters_parse(params: Mapping[str, Any]) -> AuditFilters:
    """Filters from query parameters; a malformed value is refused with the field named
    and the form it takes (``details``: ``field``, ``expected``)."""
    unknown = sorted(str(name) for name in params if name not in KNOWN_PARAMETERS)
    if unknown:
        name = unknown[0]
        raise InvalidArgumentError(
            f"{_quoted(name)} is not a parameter of the audit log; "
            f"expected one of {', '.join(sorted(KNOWN_PARAMETERS))}",
            details={"field": name, "expected": sorted(KNOWN_PARAMETERS)},
        )
    values: dict[str, Any] = {}
    for name in EXACT_FILTERS:
        values[name] = _text_value(
            name, params, f"an exact name of at most {FILTER_MAX_LENGTH} characters"
        )
    values["q"] = _text_value("q", params, f"words of at most {FILTER_MAX_LENGTH} characters")
    values.update(_subject_values(params))
    raw_invocation = str(params.get("invocation") or "").strip()
    if raw_invocation:
        try:
            values["invocation"] = uuid.UUID(raw_invocation)
        except ValueError:
            raise _refused(
                "invocation",
                f"{_quoted(raw_invocation)} is not an invocation id",
                "a UUID, e.g. 0b6f3c1e-2d4a-4f7e-9c1b-5a6d7e8f9a0b",
            ) from None
    for name in ("since", "until"):
        raw = str(params.get(name) or "").strip()
        if raw:
            values[name] = _moment(name, raw, end_of_day=name == "until")
    filters = AuditFilters(**values)
    if filters.since and filters.until and filters.since > filters.until:
        raise _refused("since", "is later than until", "a moment not later than until")
    return filters


def _subject_values(params: Mapping[str, Any]) -> dict[str, str]:
    """The argument filters, normalised as audit_app.subjects stores what they match."""
    values: dict[str, str] = {}
    for name in SUBJECT_FILTERS:
        expected = SUBJECT_EXPECTED[name]
        raw = _text_value(name, params, expected)
        if not raw:
            continue
        if name == "path":
            values[name] = normalise_path(raw)
        elif name == "host":
            bad = next((ch for ch in raw if ch in _NOT_IN_HOSTS or "\x7f" <= ch <= "\x9f"), None)
            if bad is not None:
                shown = "a space" if bad == " " else f"U+{ord(bad):04X}"
                raise _refused(name, f"{_quoted(raw)} holds {shown}", expected)
            # A name the network policy cannot read is kept as written: it matches nothing.
            values[name] = normalise_host(raw) or raw.lower()
        elif name == "program":
            values[name] = posixpath.basename(raw.rstrip("/")) or raw
        else:
            values[name] = raw
    return values


def page_size_parse(raw: Any) -> int:
    """The `limit` parameter: 1 to PAGE_SIZE_MAX, PAGE_SIZE_DEFAULT when absent."""
    expected = f"a whole number from 1 to {PAGE_SIZE_MAX}"
    if raw in (None, ""):
        return PAGE_SIZE_DEFAULT
    text = str(raw).strip()
    if not _COUNT.fullmatch(text):
        raise _refused("limit", f"{_quoted(text)} is not a whole number", expected)
    size = int(text)
    if not 1 <= size <= PAGE_SIZE_MAX:
        raise _refused("limit", f"{size} is out of range", expected)
    return size


def cursor_parse(raw: Any, name: str = "cursor") -> int | None:
    """The `cursor` parameter (or `newer`): the id the next page starts below (above)."""
    if raw in (None, ""):
        return None
    expected = f"the {name} of a page link (a positive event id)"
    text = str(raw).strip()
    if not _CURSOR.fullmatch(text) or int(text) > CURSOR_MAX:
        raise _refused(name, f"{_quoted(text)} is not an event id", expected)
    return int(text)


class ContainsIgnoringCase(IContains):
    """``icontains`` written as ``ILIKE`` on PostgreSQL, so a trigram index can serve it.

    Elsewhere it is Django's own ``icontains``; the pattern is escaped the same way.
    """

    def as_postgresql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper
    ) -> tuple[str, list[Any]]:
        lhs_sql, lhs_params = compiler.compile(self.lhs)
        rhs_sql, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs_sql}::text ILIKE {rhs_sql}", [*lhs_params, *rhs_params]


class ContainsIgnoringCaseUnindexed(ContainsIgnoringCase):
    """The same test in a form no index matches, so rows are read along another index."""

    def as_postgresql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper
    ) -> tuple[str, list[Any]]:
        lhs_sql, lhs_params = compiler.compile(self.lhs)
        rhs_sql, rhs_params = self.process_rhs(compiler, connection)
        return f"({lhs_sql}::text || '') ILIKE {rhs_sql}", [*lhs_params, *rhs_params]


def audit_events(filters: AuditFilters, *, search_by_index: bool = True) -> QuerySet[AuditEvent]:
    """Events matching `filters`, newest first.

    With `search_by_index` false the reason search cannot use the trigram index: the
    database then tests the rows another index (the id, a filter column) leads it to.
    """
    events = AuditEvent.objects.all()
    if filters.agents is not None:
        events = events.filter(agent_id__in=sorted(filters.agents))
    for name, field in EXACT_FILTERS.items():
        value = getattr(filters, name)
        if value:
            events = events.filter(**{field: value})
    if filters.invocation is not None:
        events = events.filter(invocation_id=filters.invocation)
    if filters.since is not None:
        events = events.filter(created_at__gte=filters.since)
    if filters.until is not None:
        events = events.filter(created_at__lte=filters.until)
    for kind, value in filters.subjects.items():
        events = events.filter(_acted_on(_subject_matches(kind, value)))
    if filters.q:
        search = ContainsIgnoringCase if search_by_index else ContainsIgnoringCaseUnindexed
        events = events.filter(search(F("reason"), filters.q))
    return events.order_by("-id")


def _acted_on(matches: QuerySet[AuditSubject]) -> Q:
    """Events that named one of ``matches`` themselves, or belong to a call one did:
    every event of such a call (its decision, approvals, connections, finishing)."""
    calls = matches.filter(invocation_id__isnull=False).values("invocation_id")
    return Q(id__in=matches.values("event_id")) | Q(invocation_id__in=calls)


def _subject_matches(kind: str, value: str) -> QuerySet[AuditSubject]:
    """Index rows of `kind` matching `value`: a path and everything under it, a table
    as written or folded to lower case (as unquoted names are stored), else exactly."""
    rows = AuditSubject.objects.filter(kind=kind)
    if kind == "path":
        if value == ".":
            return rows
        under = value.rstrip("/") + "/"
        # LIKE is served by the (kind, value) index; SQLite's LIKE ignores case, so the
        # head is compared too, exactly.
        return rows.annotate(head=Left("value", len(under))).filter(
            Q(value=value) | Q(value__startswith=under, head=under)
        )
    if kind == "table":
        return rows.filter(value__in={value, value.lower()})
    return rows.filter(value=value)


@dataclass(frozen=True)
class SubjectCount:
    kind: str
    value: str
    events: int
    calls: int


def audit_subject_counts(filters: AuditFilters) -> list[SubjectCount]:
    """For each argument filter in use, the values it matched among the matching events,
    most events first (at most SUBJECT_VALUES_LISTED of each)."""
    matching = audit_events(filters).order_by()
    found: list[SubjectCount] = []
    for kind, value in filters.subjects.items():
        matches = _subject_matches(kind, value)
        values = (
            matches.filter(_named_by(matching))
            .values("value")
            .annotate(
                calls=Count("invocation_id", distinct=True), named=Count("event_id", distinct=True)
            )
            .order_by("-calls", "-named", "value")
        )
        counted = []
        for row in values[:SUBJECT_VALUES_LISTED]:
            same = matches.filter(value=row["value"])
            events = matching.filter(_acted_on(same)).count()
            counted.append(SubjectCount(kind, row["value"], events, row["calls"]))
        counted.sort(key=lambda c: (-c.events, c.value))
        found += counted[:SUBJECT_VALUES_LISTED]
    return found


def _named_by(matching: QuerySet[AuditEvent]) -> Q:
    """Index rows of events among ``matching``, or of calls with an event among them."""
    return Q(event_id__in=matching.values("id")) | Q(
        invocation_id__in=matching.filter(invocation_id__isnull=False).values("invocation_id")
    )


@dataclass(frozen=True)
class AuditPage:
    events: list[AuditEvent]
    next_cursor: int | None


def audit_page(
    filters: AuditFilters, *, cursor: int | None, size: int, with_data: bool = False
) -> AuditPage:
    """One page of events below `cursor`; `next_cursor` is None on the last page."""
    if filters.q and connection.vendor == "postgresql":
        rows = _searched_rows(filters, cursor=cursor, limit=size + 1, with_data=with_data)
    else:
        rows = list(_newest(audit_events(filters), cursor, with_data)[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    return AuditPage(events=rows, next_cursor=rows[-1].id if more and rows else None)


def _newest(
    events: QuerySet[AuditEvent], below: int | None, with_data: bool
) -> QuerySet[AuditEvent]:
    if below is not None:
        events = events.filter(id__lt=below)
    return events if with_data else events.defer("data")  # the list never shows it


def _searched_rows(
    filters: AuditFilters, *, cursor: int | None, limit: int, with_data: bool
) -> list[AuditEvent]:
    """The newest `limit` events below `cursor` whose reason holds the searched text,
    on PostgreSQL, in a time that does not hang on the planner's estimates.

    Walking the id index newest first is fast when matches are frequent and reads the
    whole table when they are rare; the trigram index is fast when they are rare and
    reads every match when they are frequent. The planner picks one by how frequent
    the text looks in the sample ANALYZE drew, and that misses: the same search took
    40 ms or 600 ms on a million events, depending on the sample. So the page is taken
    in two steps. The newest SEARCH_RECENT_IDS ids are read in id order; if they hold
    fewer than `limit` matches, matches are rare enough for the rest to come from the
    trigram index (and the other filters' indexes) as bitmaps, then sorted, with no
    walk in id order allowed.
    """
    if cursor is None:
        cursor = (AuditEvent.objects.aggregate(top=Max("id"))["top"] or 0) + 1
    floor = cursor - SEARCH_RECENT_IDS
    recent = audit_events(filters, search_by_index=False).filter(id__gte=floor)
    rows = list(_newest(recent, cursor, with_data)[:limit])
    if len(rows) == limit or floor <= 1:
        return rows
    older = _newest(audit_events(filters), floor, with_data)
    with transaction.atomic(), connection.cursor() as planner:
        # Local to this transaction, and set back below for an enclosing one.
        planner.execute(
            "SELECT set_config('enable_indexscan', 'off', true), "
            "set_config('enable_seqscan', 'off', true)"
        )
        rows += list(older[: limit - len(rows)])
        planner.execute(
            "SELECT set_config('enable_indexscan', 'on', true), "
            "set_config('enable_seqscan', 'on', true)"
        )
    return rows


def audit_page_query(filters: AuditFilters, cursor: int | None, size: int | None = None) -> str:
    """The query string of a page: filters, cursor, and the page size when not the default."""
    query = filters.as_query()
    if cursor is not None:
        query["cursor"] = str(cursor)
    if size is not None and size != PAGE_SIZE_DEFAULT:
        query["limit"] = str(size)
    return urlencode(query)


def audit_export_rows(filters: AuditFilters) -> Iterator[tuple[Any, ...]]:
    """Every matching event as a tuple of EXPORT_COLUMNS plus its data as JSON text.

    Streamed from the database in chunks: memory stays flat however many rows match.
    """
    rows = (
        audit_events(filters)
        .annotate(data_text=Cast("data", TextField()))
        .values_list(*EXPORT_COLUMNS, "data_text")
    )
    return rows.iterator(chunk_size=EXPORT_CHUNK_ROWS)


def audit_event_get(event_id: int) -> AuditEvent | None:
    return AuditEvent.objects.filter(id=event_id).first()


def invocation_told(invocation_id: uuid.UUID) -> Invocation | None:
    """The call behind a timeline, with what its agent said about it (task, purpose)."""
    return (
        Invocation.objects.select_related("agent")
        .only("id", "tool", "status", "task_id", "purpose", "agent__name")
        .filter(id=invocation_id)
        .first()
    )


def invocation_timeline(invocation_id: uuid.UUID) -> list[AuditEvent]:
    """Every event of one call, in the order it happened."""
    return list(AuditEvent.objects.filter(invocation_id=invocation_id).order_by("id"))


@dataclass(frozen=True)
class EventOutput:
    """What the detail page shows of the call behind an event."""

    invocation: Invocation | None
    trace: list[str]
    sanitised: str
    raw_redacted: str | None
    arguments: str | None  # JSON text, secrets redacted
    data: str  # the event's recorded data as JSON text
    show_raw: bool  # auditors see raw output and arguments (secrets still redacted)


def event_output(event: AuditEvent, *, with_raw: bool) -> EventOutput:
    """The decision trace and output of the event's call; raw output only when `with_raw`.

    Raw output goes through secret redaction again on the way out: it is kept raw for
    forensics, never shown with credentials in clear.
    """
    invocation = (
        Invocation.objects.filter(id=event.invocation_id).first() if event.invocation_id else None
    )
    data = event.data or {}
    trace = list(
        data.get("trace") or (invocation.decision.get("trace") if invocation else []) or []
    )
    arguments = data.get("arguments")
    if arguments is None and invocation is not None:
        arguments = invocation.arguments_redacted
    raw = None
    if with_raw and invocation is not None:
        raw = redact_secrets(invocation.raw_content)
    return EventOutput(
        invocation=invocation,
        trace=[str(step) for step in trace],
        sanitised=invocation.content if invocation else "",
        raw_redacted=raw,
        arguments=None if arguments is None else json.dumps(arguments, indent=2, default=str),
        data=json.dumps(data, indent=2, default=str) if data else "",
        show_raw=with_raw,
    )
