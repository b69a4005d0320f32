"""A console configured for single sign-on with a provider of the tests' own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings

from common.settings_config import config_reload
from tests.support.oidc.provider import TestProvider
from trust_app.sso.provider import forget_clients

SECRET_ENV = "SYNTHORG_TEST_OIDC_CLIENT_SECRET"
CALLBACK = "http://testserver/accounts/sso/callback/"
SIGNED_OUT = "http://testserver/accounts/login/"
ROLES = {"console-operators": "operator", "console-admins": "admin", "console-audit": "auditor"}
ACCOUNTS: dict[str, dict[str, Any]] = {
    "alice": {"preferred_username": "alice-sso", "groups": ["console-operators", "staff"]},
    "bob": {"preferred_username": "bob-sso", "groups": ["console-admins"]},
    "carol": {"preferred_username": "carol-sso", "groups": ["marketing"]},
    # Names another console account already holds, plainly and with a look-alike letter.
    "mallory": {"preferred_username": "admin", "groups": ["console-admins"]},
    "eve": {"preferred_username": "\u0430dmin", "groups": ["console-admins"]},
}


def people_config(tmp_path: Path, issuer: str, client_id: str, **people: Any) -> Path:
    path = tmp_path / "synthorg.yaml"
    section: dict[str, Any] = {
        "oidc": {
            "issuer": issuer,
            "client_id": client_id,
            "client_secret_env": SECRET_ENV,
            "label": "Sign in with Example Corp",
            "scopes": ["openid", "profile", "email", "groups"],
            "roles": ROLES,
        },
        **people,
    }
    path.write_text(yaml.safe_dump({"people": section}))
    return path


@pytest.fixture
def provider() -> Iterator[TestProvider]:
    with TestProvider(
        accounts=ACCOUNTS, redirect_uris=[CALLBACK], post_logout_redirect_uris=[SIGNED_OUT]
    ) as running:
        yield running


@pytest.fixture
def sso_console(
    provider: TestProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestProvider]:
    """The console's config names ``provider``; its secret is in the environment."""
    monkeypatch.setenv(SECRET_ENV, provider.client_secret)
    settings.SYNTHORG_CONFIG = str(people_config(tmp_path, provider.issuer, provider.client_id))
    config_reload()
    forget_clients()
    yield provider
    forget_clients()
