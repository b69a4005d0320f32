"""ID tokens the console must refuse, from a provider of the test's own that speaks the
protocol and forges what it is told: a key not in its JWKS, another issuer or audience,
expired, another sign-in's nonce, unsigned, absent. Each refusal signs nobody in and is
audited; the control (a good token from the same provider) signs in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from audit_app.models import AuditEvent
from common.settings_config import config_reload
from tests.support.oidc.forger import MODES, ForgingProvider, follow_authorize
from tests.trust_app.sso.conftest import SECRET_ENV, people_config
from trust_app.sso.provider import forget_clients

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def forger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ForgingProvider]:
    claims = {"sub": "f-1", "preferred_username": "frank-sso", "groups": ["console-operators"]}
    with ForgingProvider(client_id="console", client_secret="s3cret", claims=claims) as running:
        monkeypatch.setenv(SECRET_ENV, running.client_secret)
        settings.SYNTHORG_CONFIG = str(people_config(tmp_path, running.issuer, "console"))
        config_reload()
        forget_clients()
        yield running
        forget_clients()


def _attempt(forger: ForgingProvider, mode: str) -> tuple[int, Client]:
    forger.mode = mode
    console = Client()
    start = console.get("/accounts/sso/")
    assert start.status_code == 302, start.content[:300]
    back = urlsplit(follow_authorize(start["Location"]))
    answer = console.get(back.path, parse_qs(back.query))
    return answer.status_code, console


@pytest.mark.parametrize("mode", [m for m in MODES if m != "good"])
def test_a_forged_id_token_signs_nobody_in(forger: ForgingProvider, mode: str) -> None:
    status, console = _attempt(forger, mode)
    assert status == 400, mode
    assert console.get("/approvals/").status_code == 302  # still anonymous
    assert not get_user_model().objects.filter(username="frank-sso").exists()
    refused = AuditEvent.objects.filter(kind="signin.failed").first()
    assert refused is not None and "single sign-on refused" in refused.reason
    # Control: the same provider's good token signs in.
    status, console = _attempt(forger, "good")
    assert status == 302
    assert console.get("/approvals/").status_code == 200


def test_the_code_is_exchanged_with_the_pkce_verifier(forger: ForgingProvider) -> None:
    """The provider checks the verifier against the challenge (the forger refuses a
    mismatch): the console sends the right one, so the exchange succeeds."""
    before = forger.token_requests
    status, _ = _attempt(forger, "good")
    assert status == 302 and forger.token_requests == before + 1
