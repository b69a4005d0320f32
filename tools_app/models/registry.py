"""The tool registry as the console shows and governs it (definitions come from code or MCP)."""

from __future__ import annotations

from django.db import models


class ToolDefinition(models.Model):
    name = models.CharField(max_length=200, unique=True)
    source = models.CharField(max_length=200, default="builtin")
    category = models.CharField(max_length=40)
    action_type = models.CharField(max_length=80)
    safety_class = models.CharField(max_length=20)
    definition = models.JSONField()
    definition_hash = models.CharField(max_length=64)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
