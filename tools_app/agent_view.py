"""What an agent is shown: every text and structure through the one sanitiser.

Tool output, structured results, error messages and the reasons relayed to an
agent (REST and MCP alike) go through these, with the console's known secrets
and the size settings, so no path to an agent skips a step.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from tools_app.sanitize import (
    SanitizedStructure,
    SanitizedText,
    sanitize_output,
    sanitize_structure,
)
from tools_app.secrets import known_secrets


def agent_output(text: str) -> SanitizedText:
    """A tool's text output as an agent sees it, cut to the result size limit."""
    return sanitize_output(
        text,
        known_secrets=known_secrets(),
        max_chars=settings.SYNTHORG_RESULT_MAX_CHARS,
        min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
    )


def agent_message(text: str) -> str:
    """An error message or a reason as an agent sees it, cut to the message size limit."""
    return sanitize_output(
        text,
        known_secrets=known_secrets(),
        max_chars=settings.SYNTHORG_ERROR_MAX_CHARS,
        min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
    ).text


def agent_structure(value: Any) -> SanitizedStructure:
    """A structured result as an agent sees it: every string and key sanitised,
    numbers, booleans and nulls kept."""
    return sanitize_structure(
        value,
        known_secrets=known_secrets(),
        min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
    )
