"""People endpoints: sessions (with CSRF) or personal tokens; agents are refused (403)."""

from __future__ import annotations

from typing import Any

from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.permissions import BasePermission

from common.errors import ForbiddenError, UnauthenticatedError
from common.roles import Role, has_any_role
from trust_app.auth import bearer_token, person_for_token
from trust_app.tokens.bearer import token_kind


class PersonTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Any) -> tuple[Any, str] | None:
        token = bearer_token(request._request)
        if token is None:
            if request._request.headers.get("Authorization", "").strip():
                # A credential that cannot be judged is refused, never ignored in
                # favour of a session cookie sent beside it.
                raise UnauthenticatedError(
                    "the Authorization header must be `Bearer <personal token>`"
                )
            return None
        if token_kind(token) == "agent":
            raise ForbiddenError("this endpoint is for people; agent tokens are refused")
        person = person_for_token(token)
        if person is None:
            raise UnauthenticatedError("the personal token is unknown or revoked")
        return person, token

    def authenticate_header(self, request: Any) -> str:
        return 'Bearer realm="synthorg"'


def roles_required(*roles: Role) -> type[BasePermission]:
    """A permission class admitting people who hold any of `roles`."""
    allowed = frozenset(roles)

    class HasRole(BasePermission):
        def has_permission(self, request: Any, view: Any) -> bool:
            user = request.user
            if user is None or not getattr(user, "is_authenticated", False):
                raise UnauthenticatedError(
                    "sign in, or send Authorization: Bearer <personal token>"
                )
            if not has_any_role(user, allowed):
                names = ", ".join(sorted(r.group for r in allowed))
                raise ForbiddenError(f"this needs one of the roles: {names}")
            return True

    return HasRole


# The docstring is each operation's description in the OpenAPI schema.
class PersonView:
    """A people's endpoint: a signed-in session (with the X-CSRFToken header) or
    `Authorization: Bearer <personal token>`; an agent token is refused (403)."""

    authentication_classes = [PersonTokenAuthentication, SessionAuthentication]
