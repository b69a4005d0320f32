"""Named secrets, their encrypted versions and who may use them.

A value is stored only as a Fernet token (`ciphertext`); the key that made it
is named by `key_id` so a key rotation knows what is left to re-encrypt.
"""

from __future__ import annotations

from django.db import models

from common.models import TimestampedModel, UUIDModel
from common.vocabulary.sealing import DEFAULT_INJECTION


class Secret(UUIDModel, TimestampedModel):
    name = models.CharField(max_length=100, unique=True)
    # The version `${secret:NAME}` resolves to; older versions are kept.
    current_version = models.PositiveIntegerField(default=0)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class SecretVersion(models.Model):
    secret = models.ForeignKey(Secret, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    # Empty once the secret is revoked: a revoked value cannot be read back.
    ciphertext = models.TextField(blank=True, editable=False)
    key_id = models.CharField(max_length=12, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["secret", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["secret", "number"], name="secret_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.secret_id} v{self.number}"


class SecretGrant(UUIDModel):
    """`agent` may use `secret` with `tool` (a tool's name), or, with `server` set,
    the upstream MCP server of that name may be started with it for the agent. A
    server grant without an agent is for a server shared by every agent (one
    process per worker), started with no agent in particular."""

    secret = models.ForeignKey(Secret, on_delete=models.CASCADE, related_name="grants")
    agent = models.ForeignKey(
        "trust_app.Agent",
        on_delete=models.CASCADE,
        related_name="secret_grants",
        null=True,
        blank=True,
    )
    tool = models.CharField(max_length=200, blank=True)
    server = models.CharField(max_length=200, blank=True)
    # Sealed use (common.vocabulary.sealing): the destinations the console adds the
    # value to on the way out, and where in the request. Empty: no sealed use. Null
    # and database defaults, so nodes of the previous release keep writing grants
    # during a rolling upgrade.
    hosts = models.JSONField(default=list, blank=True, null=True)
    inject = models.CharField(max_length=140, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["secret__name", "agent__name", "tool", "server"]
        constraints = [
            models.UniqueConstraint(
                fields=["secret", "agent", "tool", "server"], name="secret_grant_unique"
            ),
            models.CheckConstraint(
                condition=~models.Q(tool="", server=""), name="secret_grant_names_a_use"
            ),
            models.CheckConstraint(
                condition=models.Q(agent__isnull=False) | ~models.Q(server=""),
                name="secret_grant_tool_names_an_agent",
            ),
        ]

    @property
    def use(self) -> str:
        base = f"server {self.server}" if self.server else self.tool
        if self.hosts:
            return f"{base} → {', '.join(self.hosts)} ({self.inject or DEFAULT_INJECTION})"
        return base

    @property
    def holder(self) -> str:
        return self.agent.name if self.agent is not None else "every agent"
