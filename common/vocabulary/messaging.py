"""PURE: email addresses, domains and Slack channels as the allowlists compare them.

Shared by the ``communication`` config section and the agents' own grants
(``email_recipients``, ``slack_channels``), so both read an entry the same way.
"""

from __future__ import annotations

import re
from typing import Final

# A bare address: no display name, comment, quoting or folding (nothing a header could
# be smuggled through). Letters, digits and the atext punctuation RFC 5322 allows.
_LOCAL: Final = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}")
_DOMAIN: Final = re.compile(
    r"(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
)
# Slack channel names (lowercase, digits, '-', '_') or channel IDs (C…, G…).
_CHANNEL: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,79}|[CG][A-Z0-9]{6,20}")


def email_domain(value: str) -> str:
    """A domain as the allowlists compare it (lowercase); ValueError says what is wrong."""
    domain = value.strip().lower()
    if not _DOMAIN.fullmatch(domain):
        raise ValueError(f"{value!r} is not a domain name (such as example.com)")
    return domain


def email_address(value: str) -> str:
    """A bare address with its domain lowercased; ValueError says what is wrong."""
    local, at, domain = value.rpartition("@")
    if not at or not _LOCAL.fullmatch(local) or ".." in local or not _DOMAIN.fullmatch(domain):
        raise ValueError(
            f"{value[:120]!r} is not a bare email address (name@example.com: no display "
            "name, spaces, line breaks, commas or angle brackets)"
        )
    return f"{local}@{domain.lower()}"


def slack_channel(value: str) -> str:
    """A channel as the allowlists compare it: its name without '#', or its ID."""
    channel = value.removeprefix("#")
    if not _CHANNEL.fullmatch(channel):
        raise ValueError(
            f"{value[:120]!r} is not a Slack channel (a name such as #deploys: lowercase "
            "letters, digits, '-' and '_'; or a channel ID such as C0123ABCD)"
        )
    return channel


def recipient_grant(value: str) -> str:
    """One entry of an agent's ``email_recipients``: an address, or a domain for anyone
    there."""
    return email_address(value) if "@" in value else email_domain(value)
