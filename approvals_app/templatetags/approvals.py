"""``{% pending_approvals_count %}``: the number in every page's navigation."""

from __future__ import annotations

from django import template

from approvals_app.selectors import approvals_pending_count

register = template.Library()


@register.simple_tag
def pending_approvals_count() -> int:
    """How many requests wait for a decision now (the socket keeps it live after load)."""
    return approvals_pending_count()
