"""``{% pending_approvals_count %}``: the number in every page's navigation; and what the
inbox's rows say beyond their cards (group, name, time left)."""

from __future__ import annotations

import math
from typing import Any

from django import template

from approvals_app.selectors.requests import inbox_pending_count

register = template.Library()


@register.simple_tag(takes_context=True)
def pending_approvals_count(context: Any) -> int:
    """How many requests (approvals and promotions) of the viewer's teams wait now; the
    socket keeps it live."""
    from approvals_app.live import decider_scope

    request = context.get("request")
    return inbox_pending_count(decider_scope(getattr(request, "user", None)))


@register.simple_tag
def approval_card(request: Any) -> Any:
    """The card view of an approval request: the call as a person reads it, level, record."""
    from approvals_app.selectors.cards import card_view

    return card_view(request)


@register.simple_tag
def inbox_row(request: Any) -> Any:
    """What a request's row says beyond its card: its group (alike requests) and its name."""
    from approvals_app.selectors.inbox import row_facts

    return row_facts(request)


@register.filter
def time_left(moment: Any, now: Any) -> str:
    """The time until ``moment``, as a person reads it: "in 45 min", "in 1 h 5 min"."""
    return time_left_words((moment - now).total_seconds())


def time_left_words(seconds: float) -> str:
    """The words for ``seconds`` left, as in "in 45 min" (rounded up: the deadline is within)."""
    if seconds <= 0:
        return "expiring"
    if seconds < 60:
        return f"in {math.ceil(seconds)} s"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"in {minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"in {hours} h {rest} min" if rest else f"in {hours} h"
