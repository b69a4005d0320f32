"""Password sign-in only for the accounts the config allows, and sessions of people
signed in through the provider.

``LocalAccountBackend`` is Django's ModelBackend that, with ``people.local_accounts:
false``, accepts a password only from the ``break_glass`` accounts (the same for
``/admin/``); ``SingleSignOnBackend`` authenticates nothing by password and only keeps
the sessions the provider's sign-in opened."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend

from common.settings_config import synthorg_config

SINGLE_SIGN_ON_BACKEND = "trust_app.sso.backends.SingleSignOnBackend"


class LocalAccountBackend(ModelBackend):
    def authenticate(
        self, request: Any, username: str | None = None, password: str | None = None, **kw: Any
    ) -> Any:
        if username is not None and not synthorg_config().people.password_allowed(username):
            # Read as a failure (throttled and audited like any wrong password).
            return None
        return super().authenticate(request, username=username, password=password, **kw)

    def get_user(self, user_id: Any) -> Any:
        user = super().get_user(user_id)
        if user is not None and not synthorg_config().people.password_allowed(user.get_username()):
            return None
        return user


class SingleSignOnBackend(ModelBackend):
    def authenticate(
        self, request: Any, username: str | None = None, password: str | None = None, **kw: Any
    ) -> Any:
        return None

    def get_user(self, user_id: Any) -> Any:
        user = super().get_user(user_id)
        if user is None or not user.external_identities.exists():
            return None
        return user
