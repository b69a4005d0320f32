"""Argument provenance: which of a pending call's values the agent read earlier.

The agent's most recent calls before this one (at most ``SYNTHORG_PROVENANCE_CALLS``,
50, within ``SYNTHORG_PROVENANCE_HOURS``, 24, read newest first through the
``(agent, -created_at)`` index) are the window; when the call names a task, only that
task's calls count. Of each result, the first ``SYNTHORG_PROVENANCE_SCAN_CHARS``
(65,536) characters of its content and of its structured part are fetched: a large
result costs no more than that. Each value found makes one line.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from django.conf import settings
from django.db.models import TextField
from django.db.models.functions import Cast, Left

from approvals_app.cards.provenance import EarlierResult, note_text, provenance_notes
from tools_app.models import Invocation

DEFAULT_CALLS: Final = 50
DEFAULT_HOURS: Final = 24
DEFAULT_SCAN_CHARS: Final = 65536
# Notes stored per request; the rest are counted.
MAX_NOTES: Final = 5


def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def earlier_results(invocation: Any) -> list[EarlierResult]:
    """The agent's calls before ``invocation`` in the window, newest first."""
    calls = _setting("SYNTHORG_PROVENANCE_CALLS", DEFAULT_CALLS)
    hours = _setting("SYNTHORG_PROVENANCE_HOURS", DEFAULT_HOURS)
    chars = _setting("SYNTHORG_PROVENANCE_SCAN_CHARS", DEFAULT_SCAN_CHARS)
    before = invocation.created_at
    rows = (
        Invocation.objects.filter(
            agent_id=invocation.agent_id,
            created_at__lt=before,
            created_at__gte=before - timedelta(hours=hours),
        )
        .exclude(id=invocation.id)
        .order_by("-created_at")
        .annotate(
            head=Left("content", chars),
            shaped=Left(Cast("structured", output_field=TextField()), chars),
        )
        .values_list("tool", "arguments_redacted", "task_id", "head", "shaped")[:calls]
    )
    task = invocation.task_id or ""
    return [
        EarlierResult(tool=tool, arguments=arguments or {}, output=f"{head or ''}\n{shaped or ''}")
        for tool, arguments, task_id, head, shaped in rows
        if not task or task_id == task
    ]


def provenance_texts(invocation: Any) -> list[str]:
    """One line per argument value of ``invocation`` found in an earlier result."""
    if getattr(invocation, "created_at", None) is None:
        return []
    notes = provenance_notes(invocation.arguments_redacted or {}, earlier_results(invocation))
    texts = [note_text(note) for note in notes[:MAX_NOTES]]
    if len(notes) > MAX_NOTES:
        texts.append(f"{len(notes) - MAX_NOTES} more argument value(s) appeared in earlier output")
    return texts
