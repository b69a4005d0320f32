"""Which tool bodies (L2) an agent has loaded for one task, in load order.

Progressive disclosure keeps a budget of loaded L2 bodies per agent task; when the
budget fills past the configured threshold the oldest body is unloaded first. The
order and the token estimate of each body live here so every worker sees the same
state. Calls without a task share the agent's task-less context (``task_id`` "").
"""

from __future__ import annotations

from django.db import models

from common.models import TimestampedModel


class ToolDisclosureState(TimestampedModel):
    """The loaded L2 bodies of one agent task: ``[{"name", "tokens"}]``, oldest first."""

    agent = models.ForeignKey(
        "trust_app.Agent", on_delete=models.CASCADE, related_name="disclosure_states"
    )
    task_id = models.CharField(max_length=200, blank=True, default="")
    loaded = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "task_id"], name="tools_disclosure_agent_task")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.task_id or '-'}: {len(self.loaded)} loaded"
