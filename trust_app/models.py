"""Agents, their teams, their tokens, and people's personal API tokens."""

from __future__ import annotations

import uuid

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


# The team every agent belongs to until an admin says otherwise; the migration that
# brought teams creates it, and the database gives it to agents a node of the previous
# release inserts while both releases run.
DEFAULT_TEAM_ID = uuid.UUID("00000000-0000-0000-0000-00000000d3fa")
DEFAULT_TEAM_NAME = "default"


class Team(UUIDModel):
    """A part of the organisation: its agents, and the people who hold a role in it."""

    name = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TeamRole(models.TextChoices):
    OPERATOR = "operator"
    ADMIN = "admin"
    AUDITOR = "auditor"


class TeamMembership(models.Model):
    """A person's role in one team (organisation-wide roles are the Django groups)."""

    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=TeamRole.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["person", "team", "role"], name="one_team_role_once")
        ]

    def __str__(self) -> str:
        return f"{self.person} {self.role} of {self.team}"


class Agent(UUIDModel, TimestampedModel):
    name = models.CharField(max_length=100, unique=True)
    team: models.ForeignKey[Team | uuid.UUID, Team] = models.ForeignKey(
        Team,
        on_delete=models.PROTECT,
        default=DEFAULT_TEAM_ID,
        db_default=DEFAULT_TEAM_ID,
        related_name="agents",
    )
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
    # How many of its calls run at once (None: SYNTHORG_AGENT_MAX_CONCURRENT_CALLS);
    # the calls beyond wait their turn, queued.
    max_concurrent_calls = models.PositiveSmallIntegerField(null=True, blank=True)

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


def default_token_scopes() -> list[str]:
    from trust_app.tokens.life import DEFAULT_SCOPES

    return list(DEFAULT_SCOPES)


class AgentToken(TokenBase):
    """An agent's bearer token: its scopes, its life (expiry, rotation, revocation)
    and where it was last used."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")
    scopes = models.JSONField(default=default_token_scopes)
    # None: the token does not expire. Rotation sets it to the end of the overlap.
    expires_at = models.DateTimeField(null=True, blank=True)
    rotated_at = models.DateTimeField(null=True, blank=True)
    last_used_address = models.CharField(max_length=64, blank=True)

    @property
    def active(self) -> bool:
        """Neither revoked nor past its expiry (a rotated token is active in its overlap)."""
        from django.utils import timezone

        return self.revoked_at is None and (
            self.expires_at is None or self.expires_at > timezone.now()
        )

    @property
    def state(self) -> str:
        """The token's life in words, for the console and the command."""
        if self.revoked_at is not None:
            return f"revoked {self.revoked_at:%Y-%m-%d %H:%M}"
        if not self.active:
            return "rotated out" if self.rotated_at is not None else "expired"
        if self.rotated_at is not None and self.expires_at is not None:
            return f"rotated; valid until {self.expires_at:%Y-%m-%d %H:%M}"
        return "live"

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


# --- Progressive trust -------------------------------------------------------


class TrustState(models.Model):
    """An agent's earned trust: a level per track, the score, and the clocks.

    Written only by the trust services, which lock the agent's row first so
    two evaluations never interleave; ``version`` counts the writes.
    """

    agent = models.OneToOneField(
        Agent, on_delete=models.CASCADE, primary_key=True, related_name="trust_state"
    )
    strategy = models.CharField(max_length=20)
    levels = models.JSONField(default=dict)
    level_since = models.JSONField(default=dict)
    score = models.FloatField(default=0.0)
    track_scores = models.JSONField(default=dict)
    reasons = models.JSONField(default=list)
    started_at = models.DateTimeField()
    last_verified_at = models.DateTimeField()
    last_evaluated_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"trust of {self.agent_id}"


class TrustChangeKind(models.TextChoices):
    PROMOTION = "promotion"
    DEMOTION = "demotion"
    RESET = "reset"


class TrustChange(UUIDModel):
    """One promotion, demotion or reset, with who decided and why."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="trust_changes")
    track = models.CharField(max_length=40)
    from_level = models.CharField(max_length=20, blank=True)
    to_level = models.CharField(max_length=20, blank=True)
    kind = models.CharField(max_length=20, choices=TrustChangeKind.choices)
    automatic = models.BooleanField(default=False)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    reason = models.TextField(blank=True)
    reasons = models.JSONField(default=list)
    score = models.FloatField(default=0.0)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.track} {self.from_level}->{self.to_level}"


class TrustScoreSample(models.Model):
    """The score after an evaluation that changed it, for the chart."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="trust_scores")
    at = models.DateTimeField()
    score = models.FloatField()

    class Meta:
        ordering = ["at"]
        indexes = [models.Index(fields=["agent", "at"])]

    def __str__(self) -> str:
        return f"{self.score:.2f} at {self.at}"


class InvocationResult(models.TextChoices):
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"
    DENIAL = "denial"


class TrustInvocationOutcome(models.Model):
    """How one of the agent's calls ended, as evidence (one row per call)."""

    invocation = models.OneToOneField(
        "tools_app.Invocation", on_delete=models.CASCADE, related_name="trust_outcome"
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="trust_outcomes")
    category = models.CharField(max_length=40)
    task_id = models.CharField(max_length=200, blank=True)
    result = models.CharField(max_length=10, choices=InvocationResult.choices)
    at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["agent", "task_id"])]

    def __str__(self) -> str:
        return f"{self.result} {self.category}"


class TaskDifficulty(models.TextChoices):
    TRIVIAL = "trivial"
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"
    EXPERT = "expert"


class TaskOutcome(UUIDModel):
    """A task an orchestrator reported for an agent."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="task_outcomes")
    task_id = models.CharField(max_length=200)
    difficulty = models.CharField(max_length=10, choices=TaskDifficulty.choices)
    quality = models.FloatField()
    completed = models.BooleanField()
    categories = models.JSONField(default=list)
    reported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reported_by_name = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "task_id"], name="task_outcome_once")
        ]

    def __str__(self) -> str:
        return f"task {self.task_id}"


class InvocationFeedback(UUIDModel):
    """A person's rating (1–5) of one call, with an optional note."""

    invocation = models.ForeignKey(
        "tools_app.Invocation", on_delete=models.CASCADE, related_name="feedback"
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="feedback")
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    person_name = models.CharField(max_length=150)
    category = models.CharField(max_length=40)
    rating = models.PositiveSmallIntegerField()
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["invocation", "person"], name="feedback_once")
        ]

    def __str__(self) -> str:
        return f"{self.rating}/5 by {self.person_name}"


class PromotionStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    WITHDRAWN = "withdrawn"


class PromotionRequest(UUIDModel):
    """A promotion a strategy recommends and a person must decide (single use)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="promotion_requests")
    track = models.CharField(max_length=40)
    from_level = models.CharField(max_length=20)
    to_level = models.CharField(max_length=20)
    status = models.CharField(
        max_length=20, choices=PromotionStatus.choices, default=PromotionStatus.PENDING
    )
    reasons = models.JSONField(default=list)
    score = models.FloatField(default=0.0)
    created_at = models.DateTimeField(db_index=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    decision_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "track"],
                condition=models.Q(status="pending"),
                name="one_pending_promotion_per_track",
            )
        ]

    def __str__(self) -> str:
        return f"promote {self.agent_id} {self.track} to {self.to_level}"


class ExternalIdentity(UUIDModel):
    """A person as the organisation's OpenID Connect provider names them: the pair
    (issuer, subject) never changes, whatever the provider's username or groups say."""

    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identities"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    # The roles the provider's groups gave at the last sign-in.
    roles = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="unique_external_identity")
        ]
