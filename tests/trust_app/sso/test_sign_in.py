"""Single sign-on with a real OpenID provider (panva's oidc-provider on loopback): the
authorization code flow with PKCE, groups mapped to roles, every sign-in and role change
audited, sign-out at both ends; and the ways it must refuse, each with its control."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from audit_app.models import AuditEvent
from common.roles import Role, roles_of
from tests.support.oidc.provider import TestProvider, sign_in_at_provider
from tests.trust_app.sso.conftest import ACCOUNTS
from trust_app.models import ExternalIdentity
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _sign_in(console: Client, login: str, next_page: str = "/") -> Any:
    """A person's whole way: the console's button, the provider's pages, back."""
    start = console.get("/accounts/sso/", {"next": next_page})
    assert start.status_code == 302, start.content[:500]
    authorize = start["Location"]
    with httpx.Client(timeout=30) as browser:
        back = sign_in_at_provider(browser, authorize, login)
    parts = urlsplit(back)
    assert (
        f"{parts.scheme}://{parts.netloc}{parts.path}" == "http://testserver/accounts/sso/callback/"
    )
    return console.get(parts.path, parse_qs(parts.query))


def test_a_person_signs_in_with_the_provider_and_gets_the_role_of_their_group(
    sso_console: TestProvider,
) -> None:
    console = Client()
    page = console.get("/accounts/login/").content.decode()
    assert 'href="/accounts/sso/"' in page and "Sign in with Example Corp" in page

    start = console.get("/accounts/sso/")
    query = parse_qs(urlsplit(start["Location"]).query)
    # The request a person carries to the provider: code flow, PKCE S256, state, nonce.
    assert query["response_type"] == ["code"] and query["code_challenge_method"] == ["S256"]
    assert query["state"][0] and query["nonce"][0] and query["code_challenge"][0]

    answer = _sign_in(console, "alice", next_page="/approvals/")
    assert answer.status_code == 302 and answer["Location"] == "/approvals/", answer
    assert console.get("/approvals/").status_code == 200  # an operator's page
    assert console.get("/audit/").status_code == 403  # not an auditor's
    person = get_user_model().objects.get(username="alice-sso")
    assert roles_of(person) == {Role.OPERATOR}
    assert not person.has_usable_password() and not person.is_superuser
    identity = ExternalIdentity.objects.get(person=person)
    assert (identity.issuer, identity.subject) == (sso_console.issuer, "alice")
    kinds = list(AuditEvent.objects.filter(actor_name__in=["alice-sso", "single sign-on"])
                 .values_list("kind", flat=True))  # fmt: skip
    assert "person.created" in kinds and "signin.succeeded" in kinds


def test_roles_follow_the_provider_at_each_sign_in_and_each_change_is_audited(
    sso_console: TestProvider,
) -> None:
    console = Client()
    _sign_in(console, "bob")
    person = get_user_model().objects.get(username="bob-sso")
    assert roles_of(person) == {Role.ADMIN}
    assert console.get("/agents/").status_code == 200
    # The provider moves bob to the auditors (and rotates its keys): his next sign-in
    # here follows, and the change is in the record with both sides.
    sso_console.restart({**ACCOUNTS, "bob": {**ACCOUNTS["bob"], "groups": ["console-audit"]}})
    console = Client()
    assert _sign_in(console, "bob").status_code == 302
    person = get_user_model().objects.get(username="bob-sso")
    assert roles_of(person) == {Role.AUDITOR}
    assert console.get("/audit/").status_code == 200
    assert console.get("/agents/").status_code == 403
    changes = [
        (e.data["from"], e.data["to"])
        for e in AuditEvent.objects.filter(kind="person.roles_changed").order_by("created_at")
        if e.data.get("username") == "bob-sso"
    ]
    assert changes == [([], ["admin"]), (["admin"], ["auditor"])]
    # Control: the same groups again change nothing.
    _sign_in(Client(), "bob")
    assert AuditEvent.objects.filter(kind="person.roles_changed").count() == len(changes)


def test_a_person_whose_groups_give_no_role_is_refused_and_audited(
    sso_console: TestProvider,
) -> None:
    console = Client()
    answer = _sign_in(console, "carol")
    assert answer.status_code == 403
    assert "none of your groups at the provider gives a role" in answer.content.decode()
    assert not get_user_model().objects.filter(username="carol-sso").exists()
    assert console.get("/").status_code == 302  # not signed in
    refused = AuditEvent.objects.filter(kind="signin.failed").order_by("-created_at").first()
    assert refused is not None and "none of your groups" in refused.reason
    # Control: a person in a mapped group signs in the same way.
    assert _sign_in(Client(), "alice").status_code == 302


def test_a_provider_name_never_takes_over_a_console_account(sso_console: TestProvider) -> None:
    admin = person_create(username="admin", role="admin", password="correct horse battery")
    for login in ("mallory", "eve"):
        console = Client()
        answer = _sign_in(console, login)
        assert answer.status_code == 403, login
        assert console.get("/").status_code == 302, login
    assert not ExternalIdentity.objects.filter(person=admin).exists()
    assert not get_user_model().objects.filter(username="\u0430dmin").exists()
    page = _sign_in(Client(), "eve").content.decode()
    assert "is not a plain username" in page


def test_the_callback_cannot_be_replayed_or_forged(sso_console: TestProvider) -> None:
    console = Client()
    start = console.get("/accounts/sso/")
    with httpx.Client(timeout=30) as browser:
        back = sign_in_at_provider(browser, start["Location"], "alice")
    parts = urlsplit(back)
    query = parse_qs(parts.query)
    # Another browser (no session, so no state, nonce or verifier) brings the code: refused.
    stranger = Client()
    assert stranger.get(parts.path, query).status_code == 400
    assert stranger.get("/").status_code == 302
    # A forged state: refused.
    forged = {**query, "state": ["forged-state"]}
    assert console.get(parts.path, forged).status_code == 400
    # Control: the browser that started it signs in.
    assert console.get(parts.path, query).status_code == 302
    assert console.get("/approvals/").status_code == 200
    # The same answer again (its state used, its code spent): refused.
    again = Client()
    assert again.get(parts.path, query).status_code == 400


def test_sign_out_ends_the_session_here_and_at_the_provider(sso_console: TestProvider) -> None:
    console = Client()
    _sign_in(console, "alice")
    assert console.get("/approvals/").status_code == 200
    out = console.post("/accounts/logout/")
    assert out.status_code == 302
    end = urlsplit(out["Location"])
    assert f"{end.scheme}://{end.netloc}" == sso_console.issuer
    query = parse_qs(end.query)
    assert query["id_token_hint"][0] and query["post_logout_redirect_uri"] == [
        "http://testserver/accounts/login/"
    ]
    assert console.get("/approvals/").status_code == 302
