"""What the bridge last learnt of each upstream MCP tool; web nodes and workers read it."""

from __future__ import annotations

from django.db import models


class UpstreamToolRecord(models.Model):
    """One upstream tool as the workers last discovered it.

    ``contract`` is the console's contract for it (None when the contract was refused:
    then ``reason`` says why); ``available`` is False, with ``reason``, when the server
    no longer lists the tool, fails its health check or is no longer configured.
    """

    name = models.CharField(max_length=200, unique=True)
    server = models.CharField(max_length=64, db_index=True)
    upstream_name = models.CharField(max_length=200)
    upstream_hash = models.CharField(max_length=64)
    server_identity = models.TextField()
    contract = models.JSONField(null=True)
    available = models.BooleanField(default=True)
    reason = models.TextField(blank=True, default="")
    discovered_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
