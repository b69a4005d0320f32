"""A person holding an agent's virtual desktop: while the row stands, the agent's desktop
calls are refused and only that person acts on the screen."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class DesktopTakeover(models.Model):
    """One agent's desktop taken over by one person, until they hand it back."""

    agent = models.OneToOneField(
        "trust_app.Agent",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="desktop_takeover",
    )
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    # Kept beside the key: the refusal an agent reads names the holder even if the
    # account is removed meanwhile.
    person_name = models.CharField(max_length=150)
    started_at = models.DateTimeField()
    # The person's actions keep the order they were made in: each is numbered as it is
    # sent, and a worker runs number n only after n - 1 has run (``desktop_person_act``).
    acts_sent = models.PositiveIntegerField(default=0, db_default=0)
    acts_done = models.PositiveIntegerField(default=0, db_default=0)

    def __str__(self) -> str:
        return f"{self.agent_id} held by {self.person_name}"
