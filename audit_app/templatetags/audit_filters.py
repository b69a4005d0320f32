"""Template helpers for the audit log's filter form."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()

FILTER_LABELS = {
    "agent": "Agent",
    "tool": "Tool",
    "category": "Category",
    "action_type": "Action type",
    "outcome": "Outcome",
    "status": "Status",
    "actor": "Actor",
    "kind": "Kind",
    "path": "Path (and under it)",
    "host": "Host",
    "program": "Program",
    "table": "SQL table",
}


@register.filter
def get_item(mapping: Mapping[str, Any], key: str) -> Any:
    return mapping.get(key, [])


@register.filter
def attr_of(obj: Any, name: str) -> Any:
    return getattr(obj, name, "")


@register.filter
def filter_label(name: str) -> str:
    return FILTER_LABELS.get(name, name)
