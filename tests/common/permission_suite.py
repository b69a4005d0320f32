"""The shared permission suite: every console page and people's endpoint inherits it.

A test class sets what API.md says about one URL and gets, for free, one test per
kind of caller: anonymous, an agent token, a person without a role, an operator, an
admin and an auditor. Pages send anonymous visitors to the login page; endpoints
answer 401 with the error envelope. An agent token, a person without a role and a
person whose role is not listed get 403; the listed roles get `ok_status`.

    class TestAuditListAccess(PermissionSuite):
        path = "/audit/"
        allowed = AUDIT_ROLES

`path` may name `{agent}`, `{event}`, `{invocation}`, `{token}` and `{tool}`: the
`world` fixture creates one of each.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from audit_app.models import AuditEvent
from trust_app.models import AgentToken
from trust_app.services.agents import agent_create, person_create

EVERYONE = frozenset({"operator", "admin", "auditor"})
DECIDERS = frozenset({"operator", "admin"})
ADMINS = frozenset({"admin"})
AUDIT_ROLES = frozenset({"admin", "auditor"})
PERSONAS = ("anonymous", "agent", "norole", "operator", "admin", "auditor")


def signed_in(username: str) -> Client:
    """A browser session for `username` (forced: password hashing is slow on purpose)."""
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def build_world() -> dict[str, str]:
    """One agent (with a token and an audit event) and the people of every role.

    The people are `suite-<role>` and `suite-norole`; the values fill the `{...}`
    names of a `path` (and the kwargs of the route table in test_every_route).
    """
    created = agent_create(name="suite-agent", access_level="standard")
    for role in ("operator", "admin", "auditor"):
        person_create(username=f"suite-{role}", role=role, password=None)
    get_user_model().objects.create_user(username="suite-norole", password=None)
    event = AuditEvent.objects.filter(agent_name="suite-agent").order_by("id").first()
    assert event is not None
    return {
        "agent": str(created.agent.id),
        "agent_token": created.token,
        "token": str(AgentToken.objects.get(agent=created.agent).id),
        "event": str(event.id),
        "invocation": "00000000-0000-4000-8000-000000000001",
        "tool": quote("read_file"),
    }


def client_as(persona: str, world: dict[str, str]) -> Client:
    """A client for one of PERSONAS, built on `build_world()`'s agent and people."""
    if persona == "anonymous":
        return Client()
    if persona == "agent":
        return Client(HTTP_AUTHORIZATION=f"Bearer {world['agent_token']}")
    return signed_in(f"suite-{persona}")


@pytest.mark.django_db
class PermissionSuite:
    """Base class: set `path` and `allowed` (and `kind`, `method`, `data`, `ok_status`)."""

    path: ClassVar[str]
    allowed: ClassVar[frozenset[str]]
    kind: ClassVar[str] = "page"  # "page" or "api"
    method: ClassVar[str] = "get"
    data: ClassVar[dict[str, Any] | None] = None
    ok_status: ClassVar[int | tuple[int, ...]] = 200

    @pytest.fixture
    def world(self) -> dict[str, str]:
        """One agent (with a token and an audit event) and the people of every role."""
        return build_world()

    def client_for(self, persona: str, world: dict[str, str]) -> Client:
        return client_as(persona, world)

    def url(self, world: dict[str, str]) -> str:
        return self.path.format(**world)

    def request(self, client: Client, url: str) -> Any:
        send = getattr(client, self.method)
        if self.method == "get":
            return send(url, self.data or {})
        if self.kind == "api":
            return send(url, self.data or {}, content_type="application/json")
        return send(url, self.data or {})

    @pytest.mark.parametrize("persona", PERSONAS)
    def test_who_gets_it(self, persona: str, world: dict[str, str]) -> None:
        url = self.url(world)
        response = self.request(self.client_for(persona, world), url)
        status = response.status_code
        if persona == "anonymous":
            if self.kind == "page":
                assert status == 302, f"{url}: anonymous got {status}"
                assert response["Location"].startswith("/accounts/login/?next=")
            else:
                assert status == 401, f"{url}: anonymous got {status}"
                assert response.json()["error"]["code"] == "unauthenticated"
        elif persona in self.allowed:
            expected = self.ok_status if isinstance(self.ok_status, tuple) else (self.ok_status,)
            assert status in expected, f"{url}: {persona} got {status}, wanted {expected}"
        else:
            assert status == 403, f"{url}: {persona} got {status}, wanted 403"
            if self.kind == "api":
                assert response.json()["error"]["code"] == "forbidden"
