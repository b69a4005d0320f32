"""Request bodies of the agent API (validation and the OpenAPI schema).

Every number has its range in the schema and in the message that refuses it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from common.body_fields import StrictIntegerField, StrictTextField
from tools_app.services.invocation_submit import PURPOSE_MAX


def bounded_integer(
    name: str, low: int, high: int, *, in_body: bool = True, **kwargs: Any
) -> serializers.IntegerField:
    """An integer field whose every refusal names the allowed range. In a JSON body it
    takes a number only; in a query string, the number's text."""
    allowed = f"{name} must be an integer from {low} to {high}"
    field = StrictIntegerField if in_body else serializers.IntegerField
    return field(
        min_value=low,
        max_value=high,
        error_messages={
            "invalid": f"not an integer; {allowed}",
            "min_value": f"too small; {allowed}",
            "max_value": f"too large; {allowed}",
            "max_string_length": f"too long; {allowed}",
        },
        **kwargs,
    )


def wait_field(*, in_body: bool = True) -> serializers.IntegerField:
    return bounded_integer(
        "wait",
        0,
        settings.SYNTHORG_WAIT_MAX_SECONDS,
        in_body=in_body,
        required=False,
        default=0,
        help_text="seconds to hold the answer until the invocation is terminal",
    )


def purpose_field() -> StrictTextField:
    allowed = f"purpose must be a string of at most {PURPOSE_MAX} characters"
    return StrictTextField(
        max_length=PURPOSE_MAX,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        error_messages={
            "not_text": f"not a string; {allowed}",
            "invalid": f"not a string; {allowed}",
            "max_length": f"too long; {allowed}",
            "null": f"null; {allowed} (or leave it out)",
        },
        help_text="the agent's own words for why it makes the call; shown to people",
    )


class CallSerializer(serializers.Serializer):
    # Text is taken as sent (no trimming), so the schema's lengths are the real ones.
    tool = StrictTextField(min_length=1, max_length=200, trim_whitespace=False)
    arguments = serializers.DictField(required=False, default=dict)
    idempotency_key = StrictTextField(
        min_length=1, max_length=200, required=False, allow_null=True, trim_whitespace=False
    )
    task_id = StrictTextField(
        max_length=200, required=False, allow_blank=True, default="", trim_whitespace=False
    )
    purpose = purpose_field()


class InvocationCreateSerializer(CallSerializer):
    wait = wait_field()


class BatchSerializer(serializers.Serializer):
    calls = serializers.ListField(
        child=CallSerializer(),
        min_length=1,
        max_length=settings.SYNTHORG_BATCH_MAX_CALLS,
        error_messages={
            "min_length": "a batch needs at least one call",
            "max_length": f"at most {settings.SYNTHORG_BATCH_MAX_CALLS} calls per batch",
        },
    )
    max_concurrency = bounded_integer(
        "max_concurrency",
        1,
        settings.SYNTHORG_BATCH_MAX_CALLS,
        required=False,
        allow_null=True,
        help_text="at most this many calls of the batch run at once",
    )
    wait = wait_field()


class WaitQuerySerializer(serializers.Serializer):
    wait = wait_field(in_body=False)


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()
