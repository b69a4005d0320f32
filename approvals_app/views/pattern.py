"""Remember a pattern, seen first: what it would have let through, then approve with it.

GET draws the pattern's fields for one pending request (a starting pattern filled in);
POST tries the pattern the person wrote against the agent's recent calls of the tool and
answers what it covers, with the one button that approves the request and remembers
exactly that pattern. The grant itself is made by the decision (``approval_decide``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Final

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from approvals_app.live import decider_scope
from approvals_app.models import ApprovalStatus
from approvals_app.policy.pattern_reach import pattern_reach, pattern_text, suggested_pattern
from approvals_app.selectors.pattern_reach import recent_calls, request_facts
from approvals_app.selectors.requests import approval_request
from approvals_app.services.grants import grant_pattern_check
from approvals_app.views.inbox import decider
from common.errors import InvalidArgumentError
from common.page_access import page_for
from common.settings_config import synthorg_config

TEMPLATE: Final = "approvals/_pattern.html"
GLOB_FIELD: Final = "glob-"
# The durations offered, in minutes, within the configured longest grant.
MINUTES: Final = (15, 60, 240)


def _fields(arguments: dict[str, Any], suggested: dict[str, str]) -> list[dict[str, str]]:
    """One field per argument a glob can read (text, numbers, booleans), suggested first."""
    names = [n for n in arguments if isinstance(arguments[n], str | int | float | bool)]
    names.sort(key=lambda n: (n not in suggested, n))
    return [{"name": n, "glob": suggested.get(n, "")} for n in names]


def _minutes() -> list[int]:
    longest = synthorg_config().approval.grant_max_minutes
    return [m for m in MINUTES if m <= longest] or [longest]


@page_for()
@require_http_methods(["GET", "POST"])
def remember_pattern(request: HttpRequest, request_id: uuid.UUID) -> HttpResponse:
    decider(request)
    found = approval_request(request_id, scope=decider_scope(request.user))
    if found is None:
        raise Http404(f"no approval request {request_id} among your teams' requests")
    context: dict[str, Any] = {"request": found, "minutes_offered": _minutes()}
    if found.status != ApprovalStatus.PENDING or found.required_approvals != 1:
        context["unavailable"] = (
            "this request is no longer waiting"
            if found.status != ApprovalStatus.PENDING
            else "a request that needs more than one person cannot be remembered"
        )
        return render(request, f"{TEMPLATE}#unavailable", context)
    facts = request_facts(found)
    arguments = found.invocation.arguments if isinstance(found.invocation.arguments, dict) else {}
    if request.method == "GET":
        suggested = suggested_pattern(facts) if facts is not None else {}
        context["fields"] = _fields(arguments, suggested)
        return render(request, f"{TEMPLATE}#form", context)
    written = {
        key.removeprefix(GLOB_FIELD): str(request.POST.get(key, "")).strip()
        for key in request.POST
        if key.startswith(GLOB_FIELD)
    }
    pattern = {name: glob for name, glob in written.items() if glob}
    minutes = request.POST.get("minutes", "")
    try:
        if not pattern:
            raise InvalidArgumentError(
                "write a glob for at least one argument (approve without remembering instead)"
            )
        unknown = sorted(set(pattern) - set(arguments))
        if unknown:
            raise InvalidArgumentError(f"this call has no argument {unknown[0]!r}")
        grant_pattern_check(pattern)
        if not minutes.isdigit() or int(minutes) not in _minutes():
            raise InvalidArgumentError(f"remember for one of {_minutes()} minutes")
    except InvalidArgumentError as exc:
        context["error"] = exc.message
        return render(request, f"{TEMPLATE}#reach", context)
    calls, capped = recent_calls(found)
    reach = pattern_reach(pattern, tool=found.invocation.tool, calls=calls, capped=capped)
    context.update(
        reach=reach,
        pattern_words=pattern_text(pattern),
        minutes=int(minutes),
        hours=settings.SYNTHORG_PATTERN_REACH_HOURS,
        approve_vals=json.dumps(
            {
                "decision": "approve",
                "only": str(found.id),
                f"hash-{found.id}": found.arguments_hash,
                f"remember-{found.id}": minutes,
                f"pattern-{found.id}": json.dumps(pattern, sort_keys=True),
            }
        ),
    )
    return render(request, f"{TEMPLATE}#reach", context)
