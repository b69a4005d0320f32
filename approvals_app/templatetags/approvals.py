"""``{% pending_approvals_count %}``: the number in every page's navigation."""

from __future__ import annotations

from typing import Any

from django import template

from approvals_app.selectors.requests import inbox_pending_count

register = template.Library()


@register.simple_tag
def pending_approvals_count() -> int:
    """How many requests (approvals and promotions) wait now; the socket keeps it live."""
    return inbox_pending_count()


@register.simple_tag
def approval_card(request: Any) -> Any:
    """The card view of an approval request: the call as a person reads it, level, record."""
    from approvals_app.selectors.cards import card_view

    return card_view(request)
