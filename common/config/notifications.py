"""PURE: the ``notifications`` config section: channels, and which events reach each.

A channel is a webhook (JSON signed with HMAC-SHA256), a Slack-compatible incoming
webhook, email through Django's mail backend, or web push to the people who subscribed
in their browser. A burst of events about one agent's requests of one risk tier
becomes one digest per channel (``digest_window_seconds``). Secrets (a webhook's signing key, a
Slack URL, which holds a token) are named by environment variable, never written in
the file.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import Field, field_validator, model_validator

from common.config.approval import RiskTierName
from common.strict import StrictModel
from common.vocabulary.network import NetworkTargetError, parse_url

_CHANNEL_NAME_RE: Final = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_ENV_NAME_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_EMAIL_RE: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class NotificationEvent(StrEnum):
    """What can happen to an approval request that a person may want to hear of."""

    NEW = "new"
    ESCALATED = "escalated"
    EXPIRING = "expiring"
    DECIDED = "decided"


ALL_EVENTS: Final = tuple(NotificationEvent)
ALL_TIERS: Final = tuple(RiskTierName)


def _check_env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME_RE.match(value):
        raise ValueError("must be an environment variable name (letters, digits, '_')")
    return value


def _check_url(value: str | None) -> str | None:
    if value is not None:
        try:
            parse_url(value, schemes=frozenset({"http", "https"}))
        except NetworkTargetError as exc:
            raise ValueError(f"url: {exc}") from exc
    return value


_TEAM_RE: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")


class _Channel(StrictModel):
    name: str
    events: tuple[NotificationEvent, ...] = ALL_EVENTS
    risk_tiers: tuple[RiskTierName, ...] = ALL_TIERS
    # The teams whose agents' requests this channel hears of (its recipients are their
    # people); empty: every team's.
    teams: tuple[str, ...] = ()
    enabled: bool = True
    # A burst about one agent's requests of one risk tier is sent as one digest (the
    # first at once, the rest counted in one message per window); false: one each.
    digest: bool = True

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _CHANNEL_NAME_RE.match(value):
            raise ValueError("name must be 1-64 letters, digits, '_', '.', '-'")
        return value

    @field_validator("events", "risk_tiers")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("list at least one, or leave the field out for all")
        return tuple(dict.fromkeys(value))

    @field_validator("teams")
    @classmethod
    def _teams(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for team in value:
            if not _TEAM_RE.match(team):
                raise ValueError(f"teams: {team!r} is not a team name (lower-case, digits, - _)")
        return tuple(dict.fromkeys(value))

    def wants(self, event: str, risk_tier: str, team: str | None = None) -> bool:
        """Whether this channel hears of ``event`` of a request of ``risk_tier`` made by an
        agent of ``team``."""
        in_team = not self.teams or (team is not None and team in self.teams)
        return self.enabled and event in self.events and risk_tier in self.risk_tiers and in_team


class _HttpChannel(_Channel):
    url: str | None = None
    url_env: str | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _check_url(value)

    @field_validator("url_env")
    @classmethod
    def _url_env(cls, value: str | None) -> str | None:
        return _check_env_name(value)

    @model_validator(mode="after")
    def _one_url(self) -> _HttpChannel:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("give exactly one of url or url_env")
        return self


class WebhookChannel(_HttpChannel):
    """JSON POST signed with HMAC-SHA256 under the key in ``secret_env``."""

    type: Literal["webhook"]
    secret_env: str

    @field_validator("secret_env")
    @classmethod
    def _secret_env(cls, value: str) -> str:
        return str(_check_env_name(value))


_SLACK_USER_RE: Final = re.compile(r"^[UW][A-Z0-9]{2,30}$")
_HOST_RE: Final = re.compile(r"^[a-z0-9.-]{1,253}(:[0-9]{1,5})?$")


class SlackChannel(_HttpChannel):
    """A Slack-compatible incoming webhook (``{"text": ...}``); keep its URL in ``url_env``.

    ``interactive``: the message carries Approve and Deny buttons. Slack sends a person's
    click to ``/integrations/slack/<channel>/actions/``, signed with the app's signing
    secret (``signing_secret_env``); the click decides as the person ``users`` links to
    that Slack user, under every rule a decision in the console follows, and the message
    is updated in place through Slack's ``response_url`` (only on ``response_hosts``)."""

    type: Literal["slack"]
    interactive: bool = False
    signing_secret_env: str | None = None
    # Slack user id -> the console person who decides when they click.
    users: dict[str, str] = Field(default_factory=dict)
    response_hosts: tuple[str, ...] = ("hooks.slack.com",)

    @field_validator("signing_secret_env")
    @classmethod
    def _signing_env(cls, value: str | None) -> str | None:
        return _check_env_name(value)

    @field_validator("users")
    @classmethod
    def _users(cls, value: dict[str, str]) -> dict[str, str]:
        for slack_user, person in value.items():
            if not _SLACK_USER_RE.match(slack_user):
                raise ValueError(f"users: {slack_user!r} is not a Slack user id (U… or W…)")
            if not person.strip() or len(person) > 150:
                raise ValueError(f"users: {slack_user!r} must name a person (1-150 characters)")
        return value

    @field_validator("response_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for host in value:
            if not _HOST_RE.match(host):
                raise ValueError(f"response_hosts: {host!r} is not a host name (host or host:port)")
        return value

    @model_validator(mode="after")
    def _interactive_needs_a_secret(self) -> SlackChannel:
        if self.interactive and not self.signing_secret_env:
            raise ValueError(
                "interactive: true needs signing_secret_env (Slack signs every click with it)"
            )
        return self


class EmailChannel(_Channel):
    """Email through Django's configured mail backend (``EMAIL_*`` settings)."""

    type: Literal["email"]
    to: tuple[str, ...]

    @field_validator("to")
    @classmethod
    def _addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("list at least one address")
        bad = [address for address in value if not _EMAIL_RE.match(address)]
        if bad:
            raise ValueError(f"not an email address: {', '.join(bad)}")
        return value


# The push services of the browsers people use; another (or a receiver of one's own,
# as ``host:port``, over plain http) is named in ``endpoint_hosts``.
PUSH_SERVICE_HOSTS: Final = (
    "fcm.googleapis.com",
    "updates.push.services.mozilla.com",
    "web.push.apple.com",
    "*.notify.windows.com",
)
_PUSH_HOST_RE: Final = re.compile(r"^(\*\.)?[a-z0-9.-]{1,253}(:[0-9]{1,5})?$")


class PushChannel(_Channel):
    """Web push to each person who subscribed in the console (operators and admins of
    the agent's team, or organisation-wide), signed with the console's VAPID key. A
    subscription's endpoint must be on ``endpoint_hosts``: the console posts to it."""

    type: Literal["push"]
    endpoint_hosts: tuple[str, ...] = PUSH_SERVICE_HOSTS
    # The contact a push service may write to about this console (VAPID ``sub``):
    # ``mailto:…`` or an https URL; the console's URL when left out.
    contact: str | None = None

    @field_validator("endpoint_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for host in value:
            if not _PUSH_HOST_RE.match(host):
                raise ValueError(
                    f"endpoint_hosts: {host!r} is not a host name (host, *.domain or host:port)"
                )
        return value

    @field_validator("contact")
    @classmethod
    def _contact(cls, value: str | None) -> str | None:
        if value is not None and not (
            (value.startswith("mailto:") and _EMAIL_RE.match(value.removeprefix("mailto:")))
            or value.startswith("https://")
        ):
            raise ValueError("contact must be mailto:<address> or an https:// URL")
        return value


NotificationChannel = Annotated[
    WebhookChannel | SlackChannel | EmailChannel | PushChannel, Field(discriminator="type")
]
AnyChannel = WebhookChannel | SlackChannel | EmailChannel | PushChannel


class NotificationsSection(StrictModel):
    """``notifications``: where approval events are sent, and the links they carry."""

    console_url: str | None = None
    expiring_within_seconds: int = Field(default=120, ge=5, le=86_400)
    # How long a burst is gathered into one digest; 0 sends every event on its own.
    digest_window_seconds: int = Field(default=60, ge=0, le=3600)
    channels: tuple[NotificationChannel, ...] = ()

    @field_validator("console_url")
    @classmethod
    def _console_url(cls, value: str | None) -> str | None:
        return _check_url(value)

    @field_validator("channels")
    @classmethod
    def _distinct(cls, value: tuple[AnyChannel, ...]) -> tuple[AnyChannel, ...]:
        seen: set[str] = set()
        for channel in value:
            key = channel.name.lower()
            if key in seen:
                raise ValueError(f"channel name {channel.name!r} is used twice")
            seen.add(key)
        return value

    def channel(self, name: str) -> AnyChannel | None:
        return next((c for c in self.channels if c.name == name), None)
