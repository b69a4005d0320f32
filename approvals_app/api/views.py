"""People's API for approvals: list requests, decide one (operators and admins)."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals_app.live import decider_scope
from approvals_app.models import ApprovalStatus
from approvals_app.representation import approval_json
from approvals_app.selectors.requests import approval_request, approval_requests
from approvals_app.services import GrantSpec, approval_decide
from common import openapi
from common.body_fields import StrictIntegerField, StrictRegexField, StrictTextField
from common.errors import InvalidArgumentError, NotFoundError
from common.roles import Role
from trust_app.api.people import PersonView, roles_required

LIST_MAX = 500


class RememberSerializer(serializers.Serializer):
    minutes = StrictIntegerField(min_value=1)
    pattern = serializers.DictField(
        child=StrictTextField(min_length=1, trim_whitespace=False),
        required=False,
        default=dict,
    )


class DecideSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "deny"])
    reason = StrictTextField(required=False, allow_blank=True, default="", max_length=2000)
    arguments_hash = StrictRegexField(r"^[0-9a-f]{64}$", required=False)
    remember = RememberSerializer(required=False)


class ApprovalListView(PersonView, APIView):
    permission_classes = [roles_required(Role.OPERATOR, Role.ADMIN)]

    @extend_schema(
        summary="Approval requests, oldest deadline first, as {results, next}",
        parameters=[OpenApiParameter("status", str, enum=list(ApprovalStatus.values))],
        responses={200: openapi.APPROVAL_LIST},
    )
    def get(self, request: Request) -> Response:
        status = request.query_params.get("status") or None
        if status is not None and status not in ApprovalStatus.values:
            raise InvalidArgumentError(f"status must be one of: {', '.join(ApprovalStatus.values)}")
        scope = decider_scope(request.user)
        rows = [approval_json(r) for r in approval_requests(status=status, scope=scope)[:LIST_MAX]]
        return Response({"results": rows, "next": None})


class ApprovalDetailView(PersonView, APIView):
    permission_classes = [roles_required(Role.OPERATOR, Role.ADMIN)]

    @extend_schema(
        summary="One approval request: the whole call exactly as it will run, its effect and risk",
        responses={200: openapi.APPROVAL},
    )
    def get(self, request: Request, request_id: uuid.UUID) -> Response:
        found = approval_request(request_id, scope=decider_scope(request.user))
        if found is None:
            raise NotFoundError(f"no approval request {request_id} among your teams' requests")
        return Response(approval_json(found))


class ApprovalDecideView(PersonView, APIView):
    permission_classes = [roles_required(Role.OPERATOR, Role.ADMIN)]

    @extend_schema(
        summary="Approve or deny one pending request (a denial needs a reason)",
        request=DecideSerializer,
        responses={200: openapi.APPROVAL},
    )
    def post(self, request: Request, request_id: uuid.UUID) -> Response:
        body = DecideSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        scope = decider_scope(request.user)
        if approval_request(request_id, scope=scope) is None:
            raise NotFoundError(f"no approval request {request_id} among your teams' requests")
        remember = data.get("remember")
        spec = GrantSpec(remember["minutes"], dict(remember["pattern"])) if remember else None
        decided = approval_decide(
            request=request_id,
            person=request.user,
            decision=data["decision"],
            reason=data["reason"],
            arguments_hash=data.get("arguments_hash"),
            remember=spec,
        )
        found = approval_request(decided.request.id, scope=scope)
        assert found is not None
        return Response(approval_json(found))
