"""People's API about agents: explain a hypothetical call."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common import openapi
from common.body_fields import StrictTextField
from common.errors import ForbiddenError, NotFoundError
from common.roles import Role
from common.team_scope import READ_AGENTS
from trust_app.api.people import PersonView, roles_required
from trust_app.selectors.teams import agent_edit_refusal, agent_in_scope, person_scope
from trust_app.services.agents import agent_explain


class ExplainSerializer(serializers.Serializer):
    tool = StrictTextField(min_length=1, max_length=200, trim_whitespace=False)
    arguments = serializers.DictField(required=False, default=dict)


class AgentExplainView(PersonView, APIView):
    permission_classes = [roles_required(Role.ADMIN)]

    @extend_schema(
        summary="The decision and trace for a hypothetical call; nothing runs",
        request=ExplainSerializer,
        responses={200: openapi.EXPLAIN},
    )
    def post(self, request: Request, agent_id: uuid.UUID) -> Response:
        agent = agent_in_scope(agent_id, person_scope(request.user, READ_AGENTS))
        if agent is None:
            raise NotFoundError(f"no agent {agent_id} among your teams' agents")
        refusal = agent_edit_refusal(request.user, agent)
        if refusal:
            raise ForbiddenError(refusal)
        body = ExplainSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(
            agent_explain(
                agent=agent,
                tool=body.validated_data["tool"],
                arguments=body.validated_data["arguments"],
            )
        )
