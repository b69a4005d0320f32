"""What an agent chose to remember, kept in the console's own database.

Memories belong to one agent: every read filters on the agent, so one agent never
sees another's, even by id. On PostgreSQL a GIN index over the English text-search
vector of ``content`` serves ``memory_search`` (created in the migration, since it
exists only on PostgreSQL); on SQLite the search is a plain substring match.
"""

from __future__ import annotations

from django.db import models

from common.models import TimestampedModel, UUIDModel

# The expression the GIN index is built on; the search must use exactly this one.
SEARCH_CONFIG = "english"


class AgentMemory(UUIDModel, TimestampedModel):
    """One remembered note of one agent, with optional tags for filtering."""

    agent = models.ForeignKey(
        "trust_app.Agent", on_delete=models.CASCADE, related_name="memories", editable=False
    )
    content = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    # The task the agent was on when it stored this, for the audit trail only.
    task_id = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "-created_at"], name="tools_memory_agent_new")]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.content[:40]}"
