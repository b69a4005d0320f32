"""Agent endpoints take agent tokens only: people are refused (403), strangers 401."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from common.errors import ForbiddenError, UnauthenticatedError
from trust_app.auth import agent_token_verdict, bearer_token
from trust_app.models import Agent
from trust_app.tokens.bearer import token_kind
from trust_app.tokens.life import Scope

# How to send the token, in words the output sanitiser does not take for a credential:
# `Authorization: Bearer <…>` reads to it as a header carrying one, and would be redacted.
AGENT_TOKEN_HINT = "send the header `Authorization` with the value `Bearer <your agent token>`"


@dataclass(frozen=True)
class AgentPrincipal:
    """The caller of an agent endpoint (DRF's request.user)."""

    agent: Agent
    is_authenticated: bool = True
    is_agent: bool = True


class AgentTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Any) -> tuple[AgentPrincipal, str] | None:
        token = bearer_token(request._request)
        if token is None or token_kind(token) != "agent":
            # Judge people here, before DRF replaces the Django user on the request.
            django_user = getattr(request._request, "user", None)
            if django_user is not None and django_user.is_authenticated:
                raise ForbiddenError("agent endpoints take an agent token; people use the console")
            return None
        verdict = agent_token_verdict(
            token, scope=Scope.AGENT_API, address=str(request._request.META.get("REMOTE_ADDR", ""))
        )
        if verdict.refusal is not None:
            if verdict.refusal.status == 403:
                raise ForbiddenError(verdict.refusal.reason)
            raise AuthenticationFailed(verdict.refusal.reason)
        assert verdict.agent is not None
        return AgentPrincipal(agent=verdict.agent), token

    def authenticate_header(self, request: Any) -> str:
        return 'Bearer realm="synthorg"'


class IsAgent(BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        if isinstance(request.user, AgentPrincipal):
            return True
        if bearer_token(request._request) is not None:
            raise UnauthenticatedError("the bearer token is not a valid agent token")
        raise UnauthenticatedError(AGENT_TOKEN_HINT)


# The docstring is each operation's description in the OpenAPI schema.
class AgentView:
    """An agent endpoint: send `Authorization: Bearer <agent token>`; a person's
    session or token is refused (403)."""

    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAgent]

    @staticmethod
    def agent_of(request: Any) -> Agent:
        agent: Agent = request.user.agent
        return agent
