"""Request bodies of the agent API (validation and the OpenAPI schema)."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers


class CallSerializer(serializers.Serializer):
    tool = serializers.CharField(max_length=200)
    arguments = serializers.DictField(required=False, default=dict)
    idempotency_key = serializers.CharField(
        max_length=200, required=False, allow_null=True, allow_blank=False
    )
    task_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class InvocationCreateSerializer(CallSerializer):
    wait = serializers.IntegerField(min_value=0, max_value=60, required=False, default=0)


class BatchSerializer(serializers.Serializer):
    calls = serializers.ListField(child=CallSerializer(), min_length=1)
    max_concurrency = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    wait = serializers.IntegerField(min_value=0, max_value=60, required=False, default=0)

    def validate_calls(self, value: list[dict[str, object]]) -> list[dict[str, object]]:
        if len(value) > settings.SYNTHORG_BATCH_MAX_CALLS:
            raise serializers.ValidationError(
                f"at most {settings.SYNTHORG_BATCH_MAX_CALLS} calls per batch"
            )
        return value


class WaitQuerySerializer(serializers.Serializer):
    wait = serializers.IntegerField(min_value=0, max_value=60, required=False, default=0)


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()
