"""Every route of the URLconf, and who may call it: the permission suite by construction.

`ROUTES` names every route the console serves (its URL name), with the kwargs to
reverse it and, for each method it accepts, what each kind of caller gets:
anonymous, an agent token, a person without a role, an operator, an admin and an
auditor. `test_every_route_is_in_the_table` walks django.urls.get_resolver(): a new
page or endpoint that is not in the table fails there, by name and route, so it
cannot be missed. The cases of `test_who_gets_it` are generated from the table.

What a caller gets follows the kind of route (common.page_access, trust_app.api.people,
tools_app.api.auth):

- console page: anonymous -> 302 to the login page; an agent token, a person without
  a role or a role that is not listed -> 403; a listed role -> `ok` (its answer past
  the guard: 200, a 302 after a form, or 404 for a missing object with valid kwargs).
- people's endpoint (/api/v1/, PersonView): anonymous -> 401 `unauthenticated`
  envelope; an agent token, a person without a role, a role not listed -> 403
  `forbidden` envelope; a listed role -> `ok`.
- agent endpoint (/api/v1/, AgentView): anonymous -> 401 `unauthenticated`; any
  signed-in person -> 403 `forbidden`; the agent token -> `ok`.
- public: the same answer for everyone (`ok`).

A `quirks` entry replaces one caller's answer where the route does something else on
purpose.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

from audit_app.record import Actor
from secrets_app.services import secret_grant, secret_set
from tests.common.csp_checks import (
    HEADER,
    assert_strict_policy,
    directives,
    strict_policy_problems,
)
from tests.common.permission_suite import (
    ADMINS,
    AUDIT_ROLES,
    DECIDERS,
    EVERYONE,
    PERSONAS,
    build_world,
    client_as,
)
from trust_app.models import Agent

Kind = Literal["page", "people_api", "agent_api", "public", "public_page"]
Status = int | tuple[int, ...]
NOBODY: frozenset[str] = frozenset()
LOGIN = "/accounts/login/"
# Valid kwargs that name nothing: the answer past the guard is the route's 404 (or its
# in-page refusal), which is fine as long as the guard answered first.
MISSING_UUID = "00000000-0000-4000-8000-00000000dead"
SECRET = "SUITE_ROUTE_SECRET"
# Stand-ins for `world` values when only the shape of the kwargs matters.
SAMPLE = {
    "agent": "00000000-0000-4000-8000-0000000000a1",
    "token": "00000000-0000-4000-8000-0000000000a2",
    "event": "1",
    "tool": "read_file",
    "secret": SECRET,
}
# An API answer other than success carries the error envelope with this code.
ENVELOPE_CODES = {
    400: "invalid_argument",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
}

# Routes that are not the console's own: Django's admin site (its own login and
# staff checks, not the console's roles; `admin` namespace). Static files are served
# by whitenoise/the web server, not the URLconf, so they never show up here. Listed by
# namespace so that nothing else can hide here.
NOT_OURS = {"admin": "Django's admin site: django.contrib.admin guards it (is_staff)"}


@dataclass(frozen=True)
class Rule:
    """What one method of a route answers, per caller."""

    kind: Kind
    allowed: frozenset[str] = NOBODY
    ok: Status = 200
    data: dict[str, Any] | None = None
    quirks: dict[str, Status] = field(default_factory=dict)

    def expected(self, persona: str) -> Status:
        if persona in self.quirks:
            return self.quirks[persona]
        if self.kind in ("public", "public_page"):
            return self.ok
        if persona == "anonymous":
            return 302 if self.kind == "page" else 401
        if self.kind == "agent_api":
            return self.ok if persona == "agent" else 403
        return self.ok if persona in self.allowed else 403


@dataclass(frozen=True)
class Route:
    kwargs: dict[str, str] = field(default_factory=dict)  # values: `world` keys or literals
    get: Rule | None = None
    post: Rule | None = None

    def rules(self) -> Iterator[tuple[str, Rule]]:
        for method in ("get", "post"):
            rule = getattr(self, method)
            if rule is not None:
                yield method, rule


def page(allowed: frozenset[str], ok: Status = 200, **extra: Any) -> Rule:
    return Rule("page", allowed, ok, **extra)


def people_api(allowed: frozenset[str], ok: Status = 200, **extra: Any) -> Rule:
    return Rule("people_api", allowed, ok, **extra)


def agent_api(ok: Status = 200, **extra: Any) -> Rule:
    return Rule("agent_api", NOBODY, ok, **extra)


def public(ok: Status = 200, **extra: Any) -> Rule:
    return Rule("public", NOBODY, ok, **extra)


def public_page(ok: Status = 200, **extra: Any) -> Rule:
    """Open to everyone, answered with pages (its refusals too), never the envelope."""
    return Rule("public_page", NOBODY, ok, **extra)


# fmt: off
ROUTES: dict[str, Route] = {
    # synthorg_site
    "healthz": Route(get=public(ok=(200, 503))),  # 503 names a failing part: not a refusal
    # Loopback (the test client's address) may scrape without a token; a token is judged
    # on its own: the suite agent's token has the agent API scope, not `metrics`.
    "metrics": Route(get=public(quirks={"agent": 403})),
    "dashboard": Route(get=page(EVERYONE)),
    # The login page: signed-in people are sent on (redirect_authenticated_user).
    "login": Route(get=public(quirks={r: 302 for r in (*EVERYONE, "norole")})),
    # LogoutView takes POST only, then sends everyone to the login page.
    "logout": Route(post=public(ok=302)),
    # Single sign-on: nothing to start or finish while people.oidc is not configured.
    "sso-start": Route(get=public_page(ok=404)),
    "sso-callback": Route(get=public_page(ok=404)),
    "api-schema": Route(get=public()),
    "api-docs": Route(get=public()),
    # Slack's signed button clicks: no interactive channel of that name here.
    "slack-actions": Route(kwargs={"channel": "nowhere"}, post=public(ok=404)),
    # approvals_app pages
    "approvals-inbox": Route(get=page(DECIDERS)),
    # A tier's next entries: without the tier named, refused past the guard.
    "approvals-more": Route(get=page(DECIDERS, ok=400)),
    "approvals-group": Route(kwargs={"key": "0123456789abcdef"}, get=page(DECIDERS)),
    "approvals-select": Route(get=page(DECIDERS)),
    "my-decisions": Route(get=page(DECIDERS)),
    "web-manifest": Route(get=public()),
    "service-worker": Route(get=public()),
    "push-page": Route(get=page(DECIDERS)),
    # Not JSON (the suite posts a form), or no push channel configured: 400 past the guard.
    "push-subscription": Route(post=page(DECIDERS, ok=400)),
    # The whole call of a request: every person who may decide it, nobody else.
    "approvals-call": Route(kwargs={"request_id": MISSING_UUID}, get=page(DECIDERS, ok=404)),
    "approvals-picture": Route(kwargs={"request_id": MISSING_UUID}, get=page(DECIDERS, ok=404)),
    "approvals-decide": Route(post=page(
        DECIDERS, data={"decision": "deny", "only": MISSING_UUID},
    )),
    # What a remembered pattern would cover: only for a request the person may decide.
    "approvals-pattern": Route(
        kwargs={"request_id": MISSING_UUID},
        get=page(DECIDERS, ok=404),
        post=page(DECIDERS, ok=404, data={"glob-path": "q/*", "minutes": "15"}),
    ),
    "approvals-promotion-decide": Route(post=page(
        DECIDERS, data={"decision": "deny", "only": MISSING_UUID},
    )),
    "approvals-grant-revoke": Route(
        kwargs={"grant_id": MISSING_UUID},
        post=page(DECIDERS),
    ),
    # trust_app pages
    "trust-agent": Route(
        kwargs={"agent_id": "agent"},
        get=page(DECIDERS),
    ),
    # Without the confirm box nothing changes: admins are sent back to the page,
    # operators are refused (only admins reset trust).
    "trust-agent-reset": Route(
        kwargs={"agent_id": "agent"},
        post=page(ADMINS, ok=302),
    ),
    "trust-promotion-decide": Route(
        kwargs={"promotion_id": MISSING_UUID},
        post=page(DECIDERS, ok=404, data={"decision": "deny", "reason": "suite"}),
    ),
    "agent-list": Route(get=page(DECIDERS)),
    "agent-detail": Route(kwargs={"agent_id": "agent"}, get=page(DECIDERS)),
    "agent-edit": Route(
        kwargs={"agent_id": "agent"},
        get=page(ADMINS, ok=302),  # a GET goes to the editor on the agent's page
        post=page(ADMINS, ok=302,
                  data={"access_level": "restricted", "autonomy": "semi", "action": "save"}),
    ),
    "agent-explain": Route(
        kwargs={"agent_id": "agent"},
        post=page(ADMINS, data={"tool": "read_file", "arguments": '{"path": "notes.txt"}'}),
    ),
    "agent-tokens": Route(kwargs={"agent_id": "agent"}, post=page(ADMINS, ok=302)),
    "agent-token-new": Route(kwargs={"agent_id": "agent"}, get=page(ADMINS)),
    "agent-token-rotate": Route(
        kwargs={"agent_id": "agent", "token_id": "token"}, post=page(ADMINS, ok=302),
    ),
    "agent-token-revoke": Route(
        kwargs={"agent_id": "agent", "token_id": "token"}, post=page(ADMINS, ok=302),
    ),
    # tools_app pages
    # The agent's desktop: operators watch; the owner or an admin takes over (the suite's
    # config has no desktop section: taking over and acting say the tools are off).
    "agent-desktop": Route(kwargs={"agent_id": "agent"}, get=page(DECIDERS)),
    "agent-desktop-picture": Route(
        kwargs={"agent_id": "agent", "sha256": "0" * 64}, get=page(DECIDERS, ok=404),
    ),
    "agent-desktop-take-over": Route(kwargs={"agent_id": "agent"}, post=page(ADMINS, ok=409)),
    "agent-desktop-hand-back": Route(kwargs={"agent_id": "agent"}, post=page(ADMINS, ok=302)),
    "agent-desktop-act": Route(
        kwargs={"agent_id": "agent"},
        post=page(ADMINS, ok=409, data={"action": "key", "keys": "a"}),
    ),
    "tool-list": Route(get=page(EVERYONE)),
    "upstream-review": Route(get=page(ADMINS)),
    "upstream-decide": Route(
        kwargs={"pin_id": "999999"},
        post=page(ADMINS, ok=404,
                  data={"decision": "accept", "reason": "suite", "expected_hash": "x"}),
    ),
    "tool-switch": Route(
        kwargs={"name": "tool"},
        post=page(ADMINS, ok=302, data={"enabled": "0", "reason": "suite"}),
    ),
    # audit_app pages
    "audit-list": Route(get=page(AUDIT_ROLES)),
    "audit-export-csv": Route(get=page(AUDIT_ROLES)),
    "audit-export-jsonl": Route(get=page(AUDIT_ROLES)),
    "audit-event": Route(kwargs={"event_id": "event"}, get=page(AUDIT_ROLES)),
    # The suite's event names no picture: past the guard, the route's 404.
    "audit-event-picture": Route(kwargs={"event_id": "event"}, get=page(AUDIT_ROLES, ok=404)),
    "audit-verify": Route(post=page(AUDIT_ROLES, ok=302)),
    "audit-chain-status": Route(get=page(AUDIT_ROLES)),
    "audit-invocation": Route(
        kwargs={"invocation_id": MISSING_UUID}, get=page(AUDIT_ROLES, ok=404),
    ),
    # secrets_app pages (on a real secret, `SECRET`, granted to the suite agent)
    "secret-list": Route(get=page(ADMINS)),
    "connection-list": Route(get=page(ADMINS)),
    "secret-add": Route(
        post=page(ADMINS, ok=302, data={"name": "SUITE_NEW_SECRET", "value": "suite-value-123456"}),
    ),
    "secret-rotate-keys": Route(post=page(ADMINS, ok=302)),
    "secret-rotate": Route(
        kwargs={"name": "secret"}, post=page(ADMINS, ok=302, data={"value": "suite-value-654321"}),
    ),
    "secret-revoke": Route(kwargs={"name": "secret"}, post=page(ADMINS, ok=302)),
    "secret-grant": Route(
        kwargs={"name": "secret"},
        post=page(ADMINS, ok=302,
                  data={"agent": "suite-agent", "tool": "http_request", "server": ""}),
    ),
    "secret-ungrant": Route(
        kwargs={"name": "secret"},
        post=page(ADMINS, ok=302, data={"agent": "suite-agent", "tool": "http_request"}),
    ),
    # The agent API (tools_app.api): agent tokens only.
    "api-me": Route(get=agent_api()),
    "api-tools": Route(get=agent_api()),
    "api-tool": Route(kwargs={"name": "tool"}, get=agent_api()),
    "api-tool-resource": Route(
        kwargs={"name": "tool", "resource_id": "no-such-resource"}, get=agent_api(ok=404),
    ),
    # An empty body: past the guard, the serializer refuses it (nothing is run).
    "api-invocations": Route(post=agent_api(ok=400, data={})),
    "api-invocation-batch": Route(post=agent_api(ok=400, data={})),
    "api-invocation": Route(kwargs={"invocation_id": MISSING_UUID}, get=agent_api(ok=404)),
    "api-invocation-cancel": Route(
        kwargs={"invocation_id": MISSING_UUID}, post=agent_api(ok=404),
    ),
    # People's endpoints (PersonView): sessions or personal tokens.
    "api-audit-events": Route(get=people_api(AUDIT_ROLES)),
    "api-agent-explain": Route(
        kwargs={"agent_id": "agent"},
        post=people_api(ADMINS, data={"tool": "read_file", "arguments": {"path": "notes.txt"}}),
    ),
    "api-agent-task-outcomes": Route(
        kwargs={"agent_id": "agent"}, post=people_api(DECIDERS, ok=400, data={}),
    ),
    "api-agent-trust": Route(kwargs={"agent_id": "agent"}, get=people_api(DECIDERS)),
    "api-agent-trust-reset": Route(
        kwargs={"agent_id": "agent"}, post=people_api(ADMINS, data={"reason": "suite"}),
    ),
    "api-invocation-feedback": Route(
        kwargs={"invocation_id": MISSING_UUID},
        post=people_api(DECIDERS, ok=404, data={"outcome": "success"}),
    ),
    "api-promotions": Route(get=people_api(DECIDERS)),
    "api-promotion-decide": Route(
        kwargs={"promotion_id": MISSING_UUID},
        post=people_api(DECIDERS, ok=404, data={"decision": "deny", "reason": "suite"}),
    ),
    "api-approvals": Route(get=people_api(DECIDERS)),
    "api-approval": Route(kwargs={"request_id": MISSING_UUID}, get=people_api(DECIDERS, ok=404)),
    "api-approval-decide": Route(
        kwargs={"request_id": MISSING_UUID},
        post=people_api(DECIDERS, ok=404, data={"decision": "deny", "reason": "suite"}),
    ),
}
# fmt: on


def console_routes() -> Iterator[tuple[str | None, str, str]]:
    """(name, route, view) of every URL pattern, but the NOT_OURS namespaces."""

    def walk(resolver: URLResolver, prefix: str) -> Iterator[tuple[str | None, str, str]]:
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                if entry.namespace in NOT_OURS:
                    continue
                yield from walk(entry, prefix + str(entry.pattern))
            else:
                assert isinstance(entry, URLPattern)
                view = getattr(entry.callback, "view_class", entry.callback)
                where = f"{view.__module__}.{view.__qualname__}"
                yield entry.name, prefix + str(entry.pattern), where

    yield from walk(get_resolver(), "/")


def test_every_route_is_in_the_table() -> None:
    routes = list(console_routes())
    unnamed = [f"{route} ({view})" for name, route, view in routes if name is None]
    assert not unnamed, f"routes without a name cannot be in the table: {unnamed}"
    names = [name for name, _, _ in routes if name is not None]
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"route names used twice (the table is keyed by name): {twice}"
    missing = [f"{name}: {route} ({view})" for name, route, view in routes if name not in ROUTES]
    assert not missing, "routes with no entry in ROUTES (say who may call them): " + "; ".join(
        missing
    )
    stale = sorted(set(ROUTES) - set(names))
    assert not stale, f"ROUTES names routes the URLconf no longer has: {stale}"


def test_the_table_reverses_every_route() -> None:
    """Each entry's kwargs fit its route, and each entry says at least one method."""
    for name, route in ROUTES.items():
        assert list(route.rules()), f"{name}: no method in the table"
        kwargs = {key: SAMPLE.get(value, value) for key, value in route.kwargs.items()}
        reverse(name, kwargs=kwargs)


def test_no_route_hides_another() -> None:
    """Each route's own path resolves to that route: no earlier pattern takes it, so the
    URLconf's order (agents' API first, the hot path) decides nothing."""
    for name, route in ROUTES.items():
        kwargs = {key: SAMPLE.get(value, value) for key, value in route.kwargs.items()}
        path = reverse(name, kwargs=kwargs)
        assert resolve(path).url_name == name, f"{path} resolves to {resolve(path).url_name}"


def cases() -> Iterator[Any]:
    for name, route in ROUTES.items():
        for method, _rule in route.rules():
            for persona in PERSONAS:
                yield pytest.param(name, method, persona, id=f"{name}-{method}-{persona}")


@pytest.fixture
def world() -> dict[str, str]:
    made = build_world()
    suite = Actor.system("suite")
    secret_set(name=SECRET, value="suite-value-000000", actor=suite)
    agent = Agent.objects.get(id=made["agent"])
    secret_grant(name=SECRET, agent=agent, tool="http_request", server="", actor=suite)
    made["secret"] = SECRET
    return made


def send(client: Client, method: str, url: str, rule: Rule) -> Any:
    if method == "get":
        return getattr(client, method)(url, rule.data or {})
    if rule.kind in ("people_api", "agent_api"):
        return client.post(url, rule.data or {}, content_type="application/json")
    return client.post(url, rule.data or {})


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "method", "persona"), list(cases()))
def test_who_gets_it(name: str, method: str, persona: str, world: dict[str, str]) -> None:
    route = ROUTES[name]
    rule = dict(route.rules())[method]
    url = reverse(
        name, kwargs={key: world.get(value, value) for key, value in route.kwargs.items()}
    )
    response = send(client_as(persona, world), method, url, rule)
    status = response.status_code
    expected = rule.expected(persona)
    wanted = expected if isinstance(expected, tuple) else (expected,)
    assert status in wanted, (
        f"{method.upper()} {url} ({name}): {persona} got {status}, wanted {expected}"
    )
    if rule.kind == "page" and persona == "anonymous":
        assert response["Location"].startswith(f"{LOGIN}?next="), response["Location"]
    if response.get("Content-Type", "").startswith("text/html"):
        # Every page as each caller gets it (the page, its 403 or 404, the sign-in page):
        # no inline script can run in it (synthorg_site/http_edge/csp.py).
        assert_strict_policy(response, f"{method.upper()} {url} ({name}) as {persona}")
    if rule.kind not in ("page", "public_page") and status in ENVELOPE_CODES:
        # API answers other than success carry the error envelope (API.md, "Errors").
        assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
        code = response.json()["error"]["code"]
        assert code == ENVELOPE_CODES[status], f"{url}: {status} with code {code!r}"


def test_the_policy_check_finds_a_loose_policy() -> None:
    """Control for the check above: it refuses what would let an injected script run."""
    strict = (
        "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    assert strict_policy_problems(strict) == []
    assert strict_policy_problems(None) == [f"no {HEADER} header"]
    for loose, named in (
        (strict.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'"), "script-src"),
        (strict.replace("script-src 'self'", "script-src 'self' 'unsafe-eval'"), "script-src"),
        (strict + "; script-src-attr 'unsafe-inline'", "script-src-attr"),
        (strict.replace("style-src 'self'", "style-src 'unsafe-inline'"), "style-src"),
        (strict.replace("object-src 'none'", "object-src *"), "object-src"),
        (strict.replace("; frame-ancestors 'none'", ""), "frame-ancestors"),
    ):
        problems = strict_policy_problems(loose)
        assert any(named in problem for problem in problems), (loose, problems)


ADMIN_PAGES = ("/admin/", "/admin/auth/user/", "/admin/auth/user/add/", "/admin/auth/group/add/")


@pytest.mark.django_db
def test_the_admin_site_has_the_same_strict_policy(world: dict[str, str]) -> None:
    """Django's admin (not in ROUTES) runs no inline script: the console's policy fits it."""
    from django.contrib.auth import get_user_model

    superuser = get_user_model().objects.create_superuser("suite-root", password=None)
    client = Client()
    assert_strict_policy(client.get("/admin/login/"), "/admin/login/ signed out")
    client.force_login(superuser)
    pages = [*ADMIN_PAGES, f"/admin/auth/user/{superuser.pk}/change/"]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        assert b"<script>" not in response.content, f"{path} has an inline script"
        assert_strict_policy(response, path)


@pytest.mark.django_db
def test_connect_src_allows_the_consoles_own_socket_origins(
    settings: Any, world: dict[str, str]
) -> None:
    """The approvals socket's ws:/wss: origin, asked at any allowed host, and the configured
    origins (behind a proxy); no other host's."""
    settings.SYNTHORG_ORIGINS = ["https://console.example.org"]
    settings.ALLOWED_HOSTS = ["testserver", "console.example.org"]
    response = client_as("operator", world).get("/tools/", HTTP_HOST="testserver:8443")
    assert response.status_code == 200
    connect = directives(response[HEADER])["connect-src"]
    assert connect[0] == "'self'"
    assert "ws://testserver:8443" in connect and "wss://testserver:8443" in connect
    assert "wss://console.example.org:443" in connect
    assert not [s for s in connect if "evil" in s or s in ("*", "ws:", "wss:")], connect
    # A Host the console does not serve is refused (400) and lends the policy nothing.
    refused = client_as("operator", world).get("/tools/", HTTP_HOST="evil.example.net")
    assert refused.status_code == 400
    assert "evil" not in refused.get(HEADER, ""), refused.get(HEADER)
