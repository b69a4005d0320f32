"""People's API about agents: explain a hypothetical call."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common import openapi
from common.errors import NotFoundError
from common.roles import Role
from trust_app.api.people import PersonView, roles_required
from trust_app.models import Agent
from trust_app.services.agents import agent_explain


class ExplainSerializer(serializers.Serializer):
    tool = serializers.CharField(min_length=1, max_length=200, trim_whitespace=False)
    arguments = serializers.DictField(required=False, default=dict)


class AgentExplainView(PersonView, APIView):
    permission_classes = [roles_required(Role.ADMIN)]

    @extend_schema(
        summary="The decision and trace for a hypothetical call; nothing runs",
        request=ExplainSerializer,
        responses={200: openapi.EXPLAIN},
    )
    def post(self, request: Request, agent_id: uuid.UUID) -> Response:
        agent = Agent.objects.filter(id=agent_id).first()
        if agent is None:
            raise NotFoundError(f"no agent {agent_id}")
        body = ExplainSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(
            agent_explain(
                agent=agent,
                tool=body.validated_data["tool"],
                arguments=body.validated_data["arguments"],
            )
        )
