"""``communication``: the opt-in messaging tools (``send_email``, ``slack_post``).

The section's presence turns the category on; each part turns on its own tool:

- ``email``: ``send_email`` through Django's mail backend (``EMAIL_URL``). A recipient
  must be in ``internal_domains`` (a message to those alone is ``comms:internal``) or
  ``allowed_domains`` (anyone else is ``comms:external``, which asks a person unless
  ``external_asks_a_person`` is false), and in the agent's own ``email_recipients``
  grant;
- ``slack``: ``slack_post`` to Slack's Web API (``chat.postMessage``) through a
  configured connection, whose credential the console adds; a channel must be in
  ``channels`` and in the agent's own ``slack_channels`` grant.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field, StrictBool, StrictInt, StrictStr, field_validator, model_validator

from common.strict import StrictModel
from common.vocabulary.messaging import email_address, email_domain, slack_channel

MAX_RECIPIENTS_CEILING: Final = 100
MAX_BODY_CEILING: Final = 1024 * 1024


class EmailSection(StrictModel):
    """``communication.email``: who the console sends as, and to which domains."""

    sender: StrictStr
    """The From address of every message (one address the mail server lets it use)."""
    internal_domains: tuple[StrictStr, ...] = Field(min_length=1)
    allowed_domains: tuple[StrictStr, ...] = ()
    """Domains outside the organisation an agent may be granted; none: internal only."""
    external_asks_a_person: StrictBool = True
    max_recipients: StrictInt = Field(default=10, ge=1, le=MAX_RECIPIENTS_CEILING)
    max_subject_chars: StrictInt = Field(default=200, ge=1, le=900)
    max_body_bytes: StrictInt = Field(default=16 * 1024, ge=1, le=MAX_BODY_CEILING)
    timeout_seconds: float = Field(default=30.0, gt=0, le=300)

    @field_validator("sender")
    @classmethod
    def _sender(cls, value: str) -> str:
        return email_address(value)

    @field_validator("internal_domains", "allowed_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(email_domain(entry) for entry in value)


class SlackSection(StrictModel):
    """``communication.slack``: the connection to Slack's Web API and the channels."""

    connection: StrictStr
    """A configured connection whose base URL is the Web API (https://slack.com/api)
    and whose ``auth`` holds the bot token (``bearer``)."""
    channels: tuple[StrictStr, ...] = Field(min_length=1)
    asks_a_person: StrictBool = False
    max_text_chars: StrictInt = Field(default=4000, ge=1, le=40000)

    @field_validator("channels")
    @classmethod
    def _channels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(slack_channel(entry) for entry in value)


class CommunicationSection(StrictModel):
    """The ``communication`` section; at least one of ``email`` and ``slack``."""

    email: EmailSection | None = None
    slack: SlackSection | None = None

    @model_validator(mode="after")
    def _something(self) -> CommunicationSection:
        if self.email is None and self.slack is None:
            raise ValueError("communication needs email, slack or both")
        return self
