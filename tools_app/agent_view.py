"""What an agent is shown: every text and structure through the one sanitiser.

Tool output, structured results, error messages and the reasons relayed to an
agent (REST and MCP alike) go through these, with the console's known secrets
and the size settings, so no path to an agent skips a step. While a call runs,
the values of the named secrets it uses count as known secrets too.
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
from tools_app.secrets import known_secrets_now


def agent_output(text: str) -> SanitizedText:
    """A tool's text output as an agent sees it, cut to the result size limit."""
    return sanitize_output(
        text,
        known_secrets=known_secrets_now(),
        max_chars=settings.SYNTHORG_RESULT_MAX_CHARS,
        min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
    )


def agent_message(text: str) -> str:
    """An error message or a reason as an agent sees it, cut to the message size limit."""
    return sanitize_output(
        text,
        known_secrets=known_secrets_now(),
        max_chars=settings.SYNTHORG_ERROR_MAX_CHARS,
        min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
    ).text


def agent_structure(value: Any) -> SanitizedStructure:
    """A structured result as an agent sees it: every string and key sanitised,
    numbers, booleans and nulls kept."""
    return sanitize_structure(
        value,
        known_secrets=known_secrets_now(),
        min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
    )


def decision_text(text: str) -> str:
    """The console's own words about a decision (a reason, a rule name) as an agent
    sees them: stripped and cut like a message, the console's secrets redacted.
    Credential shapes are left alone: they would read a rule named `secret-text`
    followed by a colon as a secret being assigned."""
    return sanitize_output(
        text,
        known_secrets=known_secrets_now(),
        max_chars=settings.SYNTHORG_ERROR_MAX_CHARS,
        min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
        shapes=False,
    ).text


def decision_trace(trace: Any) -> Any:
    """A decision trace as an agent sees it, string by string like `decision_text`."""
    return sanitize_structure(
        trace,
        known_secrets=known_secrets_now(),
        min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
        shapes=False,
    ).value


def error_text(message: str, *, decision_reason: Any) -> str:
    """An invocation's error message as an agent sees it. A policy denial's
    message is the decision's reason, the console's own words (`decision_text`);
    any other (tool output, a person's reason) goes through `agent_message`."""
    if message and message == decision_reason:
        return decision_text(message)
    return agent_message(message)
