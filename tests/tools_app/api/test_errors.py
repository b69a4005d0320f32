"""A refusal reaches its caller through the same sanitiser as tool output."""

from __future__ import annotations

import pytest
from django.conf import settings

from tools_app.api.errors import envelope

pytestmark = pytest.mark.django_db

HOSTILE = "\x1b[31m\u202e\u2066\u200b\U000e0041"


def test_a_refusal_quoting_hostile_input_is_stripped_and_redacted() -> None:
    response = envelope(
        "invalid_argument",
        f"argument 'path{HOSTILE}': {settings.SECRET_KEY} is not allowed",
        400,
        {"fields": {f"arguments.path{HOSTILE}": [f"bad {HOSTILE}value"]}},
    )
    error = response.data["error"]
    assert error["message"] == "argument 'path': [REDACTED:known_secret] is not allowed"
    assert error["details"] == {"fields": {"arguments.path": ["bad value"]}}


def test_a_plain_refusal_is_unchanged() -> None:
    # Positive control: nothing to strip or redact, the message and details stay.
    response = envelope("not_found", "unknown tool 'x'", 404, {"allowed": ["read_file"]})
    assert response.data["error"] == {
        "code": "not_found",
        "message": "unknown tool 'x'",
        "details": {"allowed": ["read_file"]},
    }
