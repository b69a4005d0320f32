"""Agents, their tokens, and people's personal API tokens."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from common.models import TimestampedModel, UUIDModel


class AccessLevel(models.TextChoices):
    SANDBOXED = "sandboxed"
    RESTRICTED = "restricted"
    STANDARD = "standard"
    ELEVATED = "elevated"
    CUSTOM = "custom"


class Autonomy(models.TextChoices):
    FULL = "full"
    SEMI = "semi"
    SUPERVISED = "supervised"
    LOCKED = "locked"


class Agent(UUIDModel, TimestampedModel):
    name = models.CharField(max_length=100, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_agents",
    )
    access_level = models.CharField(max_length=20, choices=AccessLevel.choices)
    autonomy = models.CharField(max_length=20, choices=Autonomy.choices, default=Autonomy.SEMI)
    workspace = models.CharField(max_length=4096)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TokenBase(UUIDModel):
    public_id = models.CharField(max_length=16, unique=True, editable=False)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class AgentToken(TokenBase):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")

    def __str__(self) -> str:
        return f"{self.agent.name} token {self.public_id}"


class PersonToken(TokenBase):
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )

    def __str__(self) -> str:
        return f"{self.person} token {self.public_id}"


class AgentPermissions(models.Model):
    """What an admin changed for one agent on top of its access level.

    `allowed` and `denied` hold tool names; `sub_constraints` the fields of
    `trust_app.policy.SubConstraintOverrides` that differ from the level's.
    """

    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="permissions")
    allowed = models.JSONField(default=list, blank=True)
    denied = models.JSONField(default=list, blank=True)
    sub_constraints = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"permissions of {self.agent.name}"
