"""The operators' inbox at /approvals/ and its requests: the first screen, more entries and
a group's members on demand, the ids a selection names, decisions (one or many), grants.

Views translate form fields into service calls and render what came back.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from approvals_app.grouping import parse_cursor
from approvals_app.live import (
    TEMPLATE,
    can_decide,
    decider_scope,
    inbox_context,
    promotion_row_html,
    row_html,
    viewer_context,
    waiting_html,
)
from approvals_app.selectors.inbox import (
    TIERS,
    group_members_page,
    inbox_entry,
    inbox_setting,
    inbox_tier_page,
    pending_ids,
)
from approvals_app.selectors.requests import approval_request, promotion_request
from approvals_app.services import (
    GrantSpec,
    approval_decide,
    approval_grant_revoke,
    approvals_decide_each,
)
from common.errors import InvalidArgumentError, SynthOrgError
from common.page_access import page_for

GROUP_KEY = re.compile(r"^[0-9a-f]{16}$")


def decider(request: HttpRequest) -> Any:
    if not can_decide(request.user):
        raise PermissionDenied("the approvals inbox is for operators and admins")
    return request.user


@page_for()
@require_GET
def inbox(request: HttpRequest) -> HttpResponse:
    """The live inbox: its first screen of pending requests (alike ones grouped) by risk,
    kept current over the socket; the rest on demand."""
    user = decider(request)
    return render(request, TEMPLATE, inbox_context(user))


def _cursor(value: str) -> tuple[tuple[int, int, str] | None, bool]:
    """The cursor named by ``value`` ("" is the start), and whether it could be read."""
    if not value:
        return None, True
    found = parse_cursor(value)
    return found, found is not None


def _fragment_refusal(element_id: str, message: str) -> HttpResponse:
    """A refused "show more": said where its button was, which stays for another try."""
    context = {"element_id": element_id, "message": message}
    return HttpResponse(render_to_string(f"{TEMPLATE}#refused-more", context), status=400)


@page_for()
@require_GET
def inbox_more(request: HttpRequest) -> HttpResponse:
    """The next entries of one risk tier (``tier``) after the cursor ``after``."""
    user = decider(request)
    tier = request.GET.get("tier", "")
    after, readable = _cursor(request.GET.get("after", ""))
    if tier not in TIERS or not readable:
        where = f"more-{tier}" if tier in TIERS else "more"
        return _fragment_refusal(where, "this list could not be continued: reload the page")
    page = inbox_tier_page(tier, after, scope=decider_scope(user))
    context = {**viewer_context(user), "page": page}
    return HttpResponse(render_to_string(f"{TEMPLATE}#more-entries", context))


@page_for()
@require_GET
def inbox_group(request: HttpRequest, key: str) -> HttpResponse:
    """More members of the group ``key`` after the cursor ``after``, with its ids as now."""
    user = decider(request)
    after, readable = _cursor(request.GET.get("after", ""))
    if not GROUP_KEY.match(key) or not readable:
        where = f"group-more-{key}" if GROUP_KEY.match(key) else "group-more"
        return _fragment_refusal(where, "this group could not be continued: reload the page")
    scope = decider_scope(user)
    entry = inbox_entry(key, scope)
    members = group_members_page(entry, after, scope=scope) if entry is not None else None
    context = {**viewer_context(user), "key": key, "members": members}
    return HttpResponse(render_to_string(f"{TEMPLATE}#more-members", context))


@page_for()
@require_GET
def inbox_select(request: HttpRequest) -> JsonResponse:
    """The ids of the pending requests of one ``agent``, one ``tool`` or one ``group``
    (of all, with none named), soonest deadline first: a selection made now."""
    user = decider(request)
    named = {k: request.GET[k] for k in ("agent", "tool", "group") if request.GET.get(k)}
    if len(named) > 1 or ("group" in named and not GROUP_KEY.match(named["group"])):
        message = "name one of agent, tool or group (a group's key)"
        error = {"code": "invalid_argument", "message": message}
        return JsonResponse({"error": error}, status=400)
    ids = pending_ids(**named, scope=decider_scope(user))
    return JsonResponse({"ids": ids, "count": len(ids)})


@dataclass
class Outcome:
    request_id: str
    tool: str
    ok: bool
    message: str
    field: str = ""  # the form field the refusal is about, shown beside it


def _ids(request: HttpRequest) -> list[str]:
    only = request.POST.get("only")
    return _uuids([only] if only else request.POST.getlist("ids"))


def _uuids(values: list[str]) -> list[str]:
    """Request ids from form values: each value one id or many (space or comma separated),
    in order, each once; what is not an id is left out."""
    seen: dict[str, None] = {}
    for value in values:
        for token in value.replace(",", " ").split():
            try:
                seen.setdefault(str(uuid.UUID(token)), None)
            except ValueError:
                continue
    return list(seen)


def _remember(request: HttpRequest, request_id: str) -> GrantSpec | None:
    """The grant a decision asks for: the same arguments for a while, or the pattern the
    person saw tried against the agent's recent calls (approvals/views/pattern.py)."""
    minutes = request.POST.get(f"remember-{request_id}", "")
    if not minutes.isdigit():
        return None
    written = request.POST.get(f"pattern-{request_id}", "")
    if not written:
        return GrantSpec(minutes=int(minutes))
    try:
        pattern = json.loads(written)
    except ValueError:
        pattern = None
    if not isinstance(pattern, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in pattern.items()
    ):
        raise InvalidArgumentError("the pattern to remember maps argument names to globs")
    return GrantSpec(minutes=int(minutes), pattern=pattern)


def _answer(
    request: HttpRequest,
    outcomes: list[Outcome],
    rows: list[str],
    *,
    settled: Sequence[str] = (),
    decided: Sequence[str] = (),
) -> HttpResponse:
    context = {"outcomes": outcomes, "settled": " ".join(settled), "decided": " ".join(decided)}
    feedback = render(request, f"{TEMPLATE}#feedback", context).content.decode()
    counts = waiting_html(with_badge=True, scope=decider_scope(request.user))
    return HttpResponse(feedback + "".join(rows) + counts)


def _decide_one(request: HttpRequest, user: Any, request_id: str, decision: str) -> HttpResponse:
    scope = decider_scope(user)
    found = approval_request(request_id, scope=scope)
    tool = found.invocation.tool if found else "?"
    try:
        approval_decide(
            request=request_id,
            person=user,
            decision=decision,
            reason=request.POST.get(f"reason-{request_id}") or request.POST.get("reason", ""),
            arguments_hash=request.POST.get(f"hash-{request_id}") or None,
            remember=_remember(request, request_id) if decision == "approve" else None,
        )
        verb = "approved" if decision == "approve" else "denied"
        outcome = Outcome(request_id, tool, True, f"you {verb} it")
    except SynthOrgError as exc:
        outcome = Outcome(request_id, tool, False, exc.message, str(exc.details.get("field", "")))
    current = approval_request(request_id, scope=scope)
    rows = [row_html(current, user, oob="true")] if current is not None else []
    settled = [request_id] if current is not None and current.status != "pending" else []
    decided = [request_id] if outcome.ok else []
    return _answer(request, [outcome], rows, settled=settled, decided=decided)


def _summary(decision: str, settled: int, recorded: int) -> list[Outcome]:
    """What a decision on many did, in a line or two (refusals follow, one per request)."""
    lines = []
    if settled:
        verb = "approved" if decision == "approve" else "denied"
        plural = "s" if settled != 1 else ""
        lines.append(Outcome("", "", True, f"you {verb} {settled:,} request{plural}"))
    if recorded:
        words = f"your approval of {recorded:,} is recorded: each needs another person's approval"
        lines.append(Outcome("", "", True, words))
    return lines


@page_for()
@require_POST
def decide(request: HttpRequest) -> HttpResponse:
    """Approve or deny one request (``only``, with its card's fields) or the selected ones
    (``ids``: any number, in one field or several; only the ids are sent)."""
    user = decider(request)
    decision = request.POST.get("decision", "")
    if request.POST.get("only"):
        ids = _ids(request)
        if ids:
            return _decide_one(request, user, ids[0], decision)
    ids = _uuids(request.POST.getlist("ids"))
    most = inbox_setting("DECIDE_MAX")
    if not ids:
        return _answer(request, [Outcome("", "", False, "select at least one request")], [])
    if len(ids) > most:
        message = f"at most {most:,} requests can be decided at once; {len(ids):,} were selected"
        return _answer(request, [Outcome("", "", False, message)], [])
    try:
        each = approvals_decide_each(
            requests=ids, person=user, decision=decision, reason=request.POST.get("reason", "")
        )
    except SynthOrgError as exc:
        field = str(exc.details.get("field", ""))
        return _answer(request, [Outcome("", "", False, exc.message, field)], [])
    settled = [o.request_id for o in each if o.ok and o.settled]
    decided = [o.request_id for o in each if o.ok]
    outcomes = _summary(decision, len(settled), len(decided) - len(settled))
    outcomes += [Outcome(o.request_id, o.what, False, o.message) for o in each if not o.ok]
    return _answer(request, outcomes, [], settled=settled, decided=decided)


@page_for()
@require_POST
def promotion_decide_inbox(request: HttpRequest) -> HttpResponse:
    """Approve or deny one promotion request (``only``) from the inbox."""
    from trust_app.services.promotion import promotion_decide

    user = decider(request)
    ids = _ids(request)
    decision = request.POST.get("decision", "")
    outcomes: list[Outcome] = []
    rows: list[str] = []
    scope = decider_scope(user)
    for promotion_id in ids[:1]:
        found = promotion_request(promotion_id, scope=scope)
        if found is None:
            outcomes.append(Outcome(promotion_id, "promotion", False, "no such promotion request"))
            continue
        what = f"promotion of {found.agent.name} to {found.to_level} on {found.track}"
        reason = (request.POST.get(f"reason-{promotion_id}") or "").strip()
        if decision == "approve" and not reason:
            reason = "approved in the inbox"
        try:
            promotion_decide(request=found, person=user, decision=decision, reason=reason)
            verb = "approved" if decision == "approve" else "denied"
            outcomes.append(Outcome(promotion_id, what, True, f"you {verb} it"))
        except SynthOrgError as exc:
            outcomes.append(
                Outcome(promotion_id, what, False, exc.message, str(exc.details.get("field", "")))
            )
        current = promotion_request(promotion_id, scope=scope)
        if current is not None:
            rows.append(promotion_row_html(current, user, oob="true"))
    if not outcomes:
        outcomes.append(Outcome("", "", False, "select a promotion request"))
    return _answer(request, outcomes, rows)


@page_for()
@require_POST
def grant_revoke(request: HttpRequest, grant_id: uuid.UUID) -> HttpResponse:
    """Revoke a standing grant; answers the grant's row."""
    user = decider(request)
    try:
        grant = approval_grant_revoke(grant=grant_id, person=user)
    except SynthOrgError as exc:
        return HttpResponse(f'<li class="grant error">{exc.message}</li>')
    return render(request, f"{TEMPLATE}#grant", {"grant": grant})
