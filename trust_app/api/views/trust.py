"""People's API for progressive trust: task outcomes, feedback, promotions, reset."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common import openapi
from common.errors import ForbiddenError, InvalidArgumentError, NotFoundError
from common.roles import Role
from common.team_scope import DECIDE, READ_AGENTS
from common.vocabulary.categories import ALL_CATEGORIES
from tools_app.models import Invocation
from trust_app.api.people import PersonView, roles_required
from trust_app.models import Agent, PromotionRequest, PromotionStatus, TaskDifficulty
from trust_app.selectors.teams import agent_edit_refusal, agent_in_scope, person_scope, team_q
from trust_app.selectors.trust import agent_trust_summary, promotion_as_dict, promotion_list
from trust_app.services.evidence import (
    NOTE_MAX,
    TASK_ID_MAX,
    invocation_feedback_record,
    task_outcome_report,
)
from trust_app.services.promotion import promotion_decide
from trust_app.services.trust import trust_reset

DECIDERS = roles_required(Role.OPERATOR, Role.ADMIN)

TASK_OUTCOME_BODY = openapi.closed_object(
    ["task_id", "difficulty", "quality", "completed"],
    {
        "task_id": {"type": "string", "minLength": 1, "maxLength": TASK_ID_MAX, "pattern": r"\S"},
        "difficulty": {"type": "string", "enum": list(TaskDifficulty.values)},
        "quality": {"type": "number", "minimum": 0, "maximum": 10},
        "completed": {"type": "boolean"},
        "categories": {"type": "array", "items": {"type": "string", "enum": list(ALL_CATEGORIES)}},
    },
)
FEEDBACK_BODY = openapi.closed_object(
    ["rating"],
    {
        "rating": {"type": "integer", "minimum": 1, "maximum": 5},
        "note": {"type": "string", "maxLength": NOTE_MAX},
    },
)
PROMOTION_DECIDE_BODY = openapi.closed_object(
    ["decision", "reason"],
    {
        "decision": {"type": "string", "enum": ["approve", "deny"]},
        "reason": {"type": "string", "minLength": 1, "pattern": r"\S"},
    },
)


def _body(
    request: Request, required: Iterable[str], optional: Iterable[str] = ()
) -> dict[str, Any]:
    data = request.data
    if not isinstance(data, dict):
        raise InvalidArgumentError("the body must be a JSON object")
    needed, allowed = tuple(required), {*required, *optional}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise InvalidArgumentError(
            f"unknown field {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )
    missing = [name for name in needed if name not in data]
    if missing:
        raise InvalidArgumentError(f"{', '.join(missing)}: required")
    return dict(data)


def _agent(request: Request, agent_id: uuid.UUID, *, edit: bool = False) -> Agent:
    """The agent when one of the person's teams holds it (404); with ``edit``, 403 unless
    they are an admin of its team or organisation-wide."""
    agent = agent_in_scope(agent_id, person_scope(request.user, READ_AGENTS))
    if agent is None:
        raise NotFoundError(f"no agent {agent_id} among your teams' agents")
    refusal = agent_edit_refusal(request.user, agent) if edit else ""
    if refusal:
        raise ForbiddenError(refusal)
    return agent


def _json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


class TaskOutcomeView(PersonView, APIView):
    permission_classes = [DECIDERS]

    @extend_schema(
        summary="Report a task outcome for an agent",
        request={"application/json": TASK_OUTCOME_BODY},
        responses={201: openapi.TASK_OUTCOME},
    )
    def post(self, request: Request, agent_id: uuid.UUID) -> Response:
        agent = _agent(request, agent_id)
        body = _body(request, ("task_id", "difficulty", "quality", "completed"), ("categories",))
        categories = body.get("categories", [])
        if not isinstance(categories, list):
            raise InvalidArgumentError("categories: a list of tool categories")
        outcome = task_outcome_report(
            agent=agent,
            person=request.user,
            task_id=body["task_id"],
            difficulty=body["difficulty"],
            quality=body["quality"],
            completed=body["completed"],
            categories=categories,
        )
        summary = agent_trust_summary(agent)
        return Response(
            {
                "id": str(outcome.id),
                "agent": str(agent.id),
                "task_id": outcome.task_id,
                "difficulty": outcome.difficulty,
                "quality": outcome.quality,
                "completed": outcome.completed,
                "categories": outcome.categories,
                "created_at": outcome.created_at.isoformat(),
                "trust": {"score": summary["score"], "levels": summary["levels"]},
            },
            status=201,
        )


class InvocationFeedbackView(PersonView, APIView):
    permission_classes = [DECIDERS]

    @extend_schema(
        summary="Rate one call from 1 to 5",
        request={"application/json": FEEDBACK_BODY},
        responses={201: openapi.FEEDBACK},
    )
    def post(self, request: Request, invocation_id: uuid.UUID) -> Response:
        scope = person_scope(request.user, DECIDE)
        rows = Invocation.objects.select_related("agent").filter(team_q(scope, "agent__team_id"))
        invocation = rows.filter(id=invocation_id).first()
        if invocation is None:
            raise NotFoundError(f"no invocation {invocation_id}")
        body = _body(request, ("rating",), ("note",))
        feedback = invocation_feedback_record(
            invocation=invocation,
            person=request.user,
            rating=body["rating"],
            note=body.get("note", ""),
        )
        return Response(
            {
                "id": str(feedback.id),
                "invocation": str(invocation.id),
                "rating": feedback.rating,
                "note": feedback.note,
                "by": feedback.person_name,
                "created_at": feedback.created_at.isoformat(),
            },
            status=201,
        )


class PromotionListView(PersonView, APIView):
    permission_classes = [DECIDERS]

    @extend_schema(
        summary="Promotion requests, ?status=pending",
        parameters=[
            OpenApiParameter("status", {"type": "string", "enum": list(PromotionStatus.values)})
        ],
        responses={200: openapi.PROMOTION_LIST},
    )
    def get(self, request: Request) -> Response:
        status = request.query_params.get("status") or None
        if status is not None and status not in PromotionStatus.values:
            raise InvalidArgumentError(f"status: one of {', '.join(PromotionStatus.values)}")
        scope = person_scope(request.user, DECIDE)
        rows = promotion_list(status=status).filter(team_q(scope, "agent__team_id"))[:500]
        return Response({"results": [promotion_as_dict(r) for r in rows]})


class PromotionDecideView(PersonView, APIView):
    permission_classes = [DECIDERS]

    @extend_schema(
        summary="Approve or deny a promotion request",
        request={"application/json": PROMOTION_DECIDE_BODY},
        responses={200: openapi.PROMOTION},
    )
    def post(self, request: Request, promotion_id: uuid.UUID) -> Response:
        scope = person_scope(request.user, DECIDE)
        rows = PromotionRequest.objects.filter(team_q(scope, "agent__team_id"))
        promotion = rows.filter(id=promotion_id).first()
        if promotion is None:
            raise NotFoundError(f"no promotion request {promotion_id} among your teams' requests")
        body = _body(request, ("decision", "reason"))
        decided = promotion_decide(
            request=promotion,
            person=request.user,
            decision=body["decision"],
            reason=body["reason"],
        )
        return Response(promotion_as_dict(decided))


class AgentTrustView(PersonView, APIView):
    permission_classes = [DECIDERS]

    @extend_schema(
        summary="An agent's trust matrix, evidence and history",
        responses={200: openapi.TRUST_SUMMARY},
    )
    def get(self, request: Request, agent_id: uuid.UUID) -> Response:
        return Response(_json(agent_trust_summary(_agent(request, agent_id))))


class AgentTrustResetView(PersonView, APIView):
    permission_classes = [roles_required(Role.ADMIN)]

    @extend_schema(
        summary="Start an agent's trust over (admins)",
        request={"application/json": openapi.REASON_BODY},
        responses={200: openapi.TRUST_SUMMARY},
    )
    def post(self, request: Request, agent_id: uuid.UUID) -> Response:
        agent = _agent(request, agent_id, edit=True)
        body = _body(request, ("reason",))
        trust_reset(agent=agent, person=request.user, reason=body["reason"])
        return Response(_json(agent_trust_summary(agent)))
