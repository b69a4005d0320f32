"""Reads for the inbox's layout: pending requests as entries (alike ones grouped), a page
at a time, the ids a selection names, and the counts the page shows.

Grouping reads only what names a call's target (``grouping.TARGET_KEYS``), never the
contents, so a flood of large writes is grouped without loading them; cards are built
only for the entries a page shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from django.conf import settings
from django.db import connection
from django.db.models import Count, QuerySet
from django.db.models.fields.json import KeyTransform

from approvals_app.grouping import (
    TARGET_KEYS,
    InboxEntry,
    PendingFacts,
    cursor_text,
    entries_after,
    facts_key,
    inbox_entries,
    members_after,
    request_name,
)
from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.selectors.requests import REQUEST_TEAM, RISK_ORDER, approval_requests
from common.team_scope import EVERYWHERE, TeamScope
from trust_app.selectors.teams import team_q

# Defaults of the inbox's settings (``SYNTHORG_INBOX_<NAME>`` in the Django settings).
DEFAULTS: Final = {
    "PAGE_ENTRIES": 20,  # entries (single requests or groups) on the first screen and per "more"
    "GROUP_PAGE": 20,  # a group's members shown per "show more"
    "DECIDE_MAX": 10_000,  # ids one decision of the selected may name
}
TIERS: Final = tuple(tier.value for tier in RISK_ORDER)
_TARGET = "target_"


def inbox_setting(name: str) -> int:
    """An inbox setting: ``SYNTHORG_INBOX_<NAME>`` from the settings, else its default."""
    return int(getattr(settings, f"SYNTHORG_INBOX_{name}", DEFAULTS[name]))


def _pending(scope: TeamScope) -> QuerySet[ApprovalRequest]:
    rows = ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING)
    return rows.filter(team_q(scope, REQUEST_TEAM))


def pending_facts(scope: TeamScope = EVERYWHERE) -> list[PendingFacts]:
    """Every pending request (of the teams ``scope`` admits), with the arguments grouping
    reads, soonest deadline first."""
    targets = {
        f"{_TARGET}{k}": KeyTransform(k, "invocation__arguments_redacted") for k in TARGET_KEYS
    }
    rows = _pending(scope)
    found = (
        rows.annotate(**targets)
        .values(
            "id",
            "risk_tier",
            "expires_at",
            "created_at",
            "invocation__tool",
            "invocation__agent_id",
            "invocation__agent__name",
            *targets,
        )
        .order_by("expires_at", "created_at", "id")
    )
    return [
        PendingFacts(
            request_id=str(row["id"]),
            tier=row["risk_tier"],
            agent_id=str(row["invocation__agent_id"]),
            agent=row["invocation__agent__name"],
            tool=row["invocation__tool"],
            targets={
                name.removeprefix(_TARGET): value
                for name, value in row.items()
                if name.startswith(_TARGET) and value is not None
            },
            expires_at=row["expires_at"],
            created_at=row["created_at"],
        )
        for row in found
    ]


def request_facts(request: ApprovalRequest) -> PendingFacts:
    """The grouping facts of a loaded request (with its invocation and agent)."""
    invocation = request.invocation
    arguments = invocation.arguments_redacted or {}
    return PendingFacts(
        request_id=str(request.id),
        tier=request.risk_tier,
        agent_id=str(invocation.agent_id),
        agent=invocation.agent.name,
        tool=invocation.tool,
        targets={k: arguments[k] for k in TARGET_KEYS if arguments.get(k) is not None},
        expires_at=request.expires_at,
        created_at=request.created_at,
    )


@dataclass(frozen=True)
class RowFacts:
    """What a request's row says about it beyond the card: its group, and its name."""

    group: str
    name: str


def row_facts(request: ApprovalRequest) -> RowFacts:
    invocation = request.invocation
    key, _ = facts_key(request_facts(request))
    name = request_name(invocation.tool, invocation.agent.name, invocation.arguments_redacted or {})
    return RowFacts(group=key, name=name)


@dataclass(frozen=True)
class EntryView:
    """An entry and the request its card shows (the first of a group)."""

    entry: InboxEntry
    request: ApprovalRequest

    @property
    def grouped(self) -> bool:
        return self.entry.count > 1


@dataclass(frozen=True)
class TierPage:
    """What one risk tier shows: some of its entries, how many requests wait in it, and
    where its next page starts (None: nothing more; "": from its beginning)."""

    tier: str
    entries: list[EntryView]
    waiting: int
    more: str | None


def _loaded(ids: Sequence[str], scope: TeamScope) -> dict[str, ApprovalRequest]:
    if not ids:
        return {}
    return {str(r.id): r for r in approval_requests(scope=scope).filter(id__in=list(ids))}


def entry_views(entries: Sequence[InboxEntry], scope: TeamScope = EVERYWHERE) -> list[EntryView]:
    """``entries`` with each first request loaded for its card (one query)."""
    loaded = _loaded([e.first.request_id for e in entries], scope)
    return [
        EntryView(e, loaded[e.first.request_id]) for e in entries if e.first.request_id in loaded
    ]


def _waiting(entries: Sequence[InboxEntry]) -> int:
    return sum(e.count for e in entries)


def inbox_first_page(size: int | None = None, scope: TeamScope = EVERYWHERE) -> list[TierPage]:
    """The first screen: the first ``size`` entries, most serious tier first."""
    room = inbox_setting("PAGE_ENTRIES") if size is None else size
    by_tier = inbox_entries(pending_facts(scope))
    pages = []
    for tier in TIERS:
        entries = by_tier.get(tier, [])
        shown = entries[: max(room, 0)]
        room -= len(shown)
        more = None if len(shown) == len(entries) else (shown[-1].cursor if shown else "")
        pages.append(TierPage(tier, entry_views(shown, scope), _waiting(entries), more))
    return pages


def inbox_tier_page(
    tier: str,
    after: tuple[int, int, str] | None,
    size: int | None = None,
    scope: TeamScope = EVERYWHERE,
) -> TierPage:
    """The next entries of ``tier`` after the cursor ``after``."""
    entries = inbox_entries(pending_facts(scope)).get(tier, [])
    shown, more = entries_after(
        entries, after, inbox_setting("PAGE_ENTRIES") if size is None else size
    )
    cursor = (shown[-1].cursor if shown else None) if more else None
    return TierPage(tier, entry_views(shown, scope), _waiting(entries), cursor)


def inbox_entry(key: str, scope: TeamScope = EVERYWHERE) -> InboxEntry | None:
    """The entry (group) named ``key`` as the pending requests make it now."""
    for entries in inbox_entries(pending_facts(scope)).values():
        for entry in entries:
            if entry.key == key:
                return entry
    return None


def inbox_entries_now(scope: TeamScope = EVERYWHERE) -> dict[str, list[InboxEntry]]:
    """Every pending request as entries, per tier."""
    return inbox_entries(pending_facts(scope))


@dataclass(frozen=True)
class MembersPage:
    entry: InboxEntry
    requests: list[ApprovalRequest]
    more: str | None  # the cursor of the last member shown, when more follow


def group_members_page(
    entry: InboxEntry,
    after: tuple[int, int, str] | None,
    size: int | None = None,
    scope: TeamScope = EVERYWHERE,
) -> MembersPage:
    """A page of the members of ``entry`` after the cursor ``after``, loaded for their cards."""
    shown, more = members_after(entry, after, inbox_setting("GROUP_PAGE") if size is None else size)
    loaded = _loaded([m.request_id for m in shown], scope)
    requests = [loaded[m.request_id] for m in shown if m.request_id in loaded]
    last = shown[-1] if shown else None
    cursor = (
        cursor_text(last.expires_at, last.created_at, last.request_id) if more and last else None
    )
    return MembersPage(entry, requests, cursor)


def pending_ids(
    *,
    agent: str | None = None,
    tool: str | None = None,
    group: str | None = None,
    scope: TeamScope = EVERYWHERE,
) -> list[str]:
    """The ids of the pending requests a selection names, soonest deadline first."""
    if group is not None:
        entry = inbox_entry(group, scope)
        return list(entry.ids) if entry is not None else []
    rows = _pending(scope)
    if agent is not None:
        rows = rows.filter(invocation__agent__name=agent)
    if tool is not None:
        rows = rows.filter(invocation__tool=tool)
    ordered = rows.order_by("expires_at", "created_at", "id").values_list("id", flat=True)
    return [str(i) for i in ordered]


@dataclass(frozen=True)
class Facets:
    """The agents and the tools with pending requests, by name, for "select by"."""

    agents: list[str]
    tools: list[str]


def inbox_facets(scope: TeamScope = EVERYWHERE) -> Facets:
    pending = _pending(scope)

    def names(field: str) -> list[str]:
        return [str(n) for n in pending.order_by(field).values_list(field, flat=True).distinct()]

    return Facets(agents=names("invocation__agent__name"), tools=names("invocation__tool"))


@dataclass(frozen=True)
class Waiting:
    """What waits, counted in one statement: approval requests per risk tier, promotions."""

    tiers: dict[str, int]
    promotions: int

    @property
    def total(self) -> int:
        return sum(self.tiers.values()) + self.promotions


def inbox_waiting(scope: TeamScope = EVERYWHERE) -> Waiting:
    """Pending approval requests per risk tier (every tier named) and pending promotion
    requests, in one statement: every live inbox reads it on every change (a person of
    some teams only: two statements, each of their teams' rows)."""
    from trust_app.models import PromotionRequest, PromotionStatus

    tiers = dict.fromkeys(TIERS, 0)
    if not scope.everywhere:
        counted = _pending(scope).values("risk_tier").annotate(n=Count("id")).order_by()
        tiers.update({str(row["risk_tier"]): int(row["n"]) for row in counted})
        waiting = PromotionRequest.objects.filter(status=PromotionStatus.PENDING)
        mine = waiting.filter(team_q(scope, "agent__team_id")).count()
        return Waiting(tiers=tiers, promotions=mine)

    approvals = ApprovalRequest._meta.db_table
    promotions = PromotionRequest._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT risk_tier, COUNT(*) FROM {approvals} WHERE status = %s GROUP BY risk_tier"  # noqa: S608
            f" UNION ALL SELECT NULL, COUNT(*) FROM {promotions} WHERE status = %s",
            [ApprovalStatus.PENDING.value, PromotionStatus.PENDING.value],
        )
        rows = cursor.fetchall()
    tiers.update({str(tier): int(n) for tier, n in rows if tier is not None})
    return Waiting(tiers=tiers, promotions=sum(int(n) for tier, n in rows if tier is None))


def loaded_requests(
    ids: Sequence[str], scope: TeamScope = EVERYWHERE
) -> dict[str, ApprovalRequest]:
    """Requests by id with what their rows show (one query)."""
    return _loaded(ids, scope)
