"""Every route of the URLconf, and which team's objects it reaches: the role matrix of
API.md ("People") extended to teams.

Two teams, ``team-a`` and ``team-b``, each with an agent, its token, a pending approval
request, a pending promotion request, a standing grant and audit events. ``a-operator``,
``a-admin`` and ``a-auditor`` hold their role in team-a only; ``org-operator``,
``org-admin`` and ``org-auditor`` hold it organisation-wide.

Every route of ``test_every_route.ROUTES`` (itself checked against the URLconf) is
classified here: a route about one team's object (``TEAM_OBJECTS``), a list of teams'
objects (``TEAM_LISTS``), a page about what every team shares (``ORG_WIDE``), or one
that is neither (``NOT_TEAMS``, with the reason). A route added to the URLconf and not
classified fails ``test_every_route_is_classified``; a route whose kwargs name an object
that belongs to a team must be in ``TEAM_OBJECTS``.

Each case tries the other team's object first (refused: 403 or 404, or an in-page
refusal that changed nothing) and then, as its positive control, the same person on
their own team's object (the route's answer, and the change it makes); the
organisation-wide person of the same role reaches the other team's object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from approvals_app.models import ApprovalGrant, ApprovalRequest
from approvals_app.selectors.inbox import row_facts
from audit_app.models import AuditEvent
from audit_app.record import Actor
from secrets_app.services import secret_grant, secret_set
from tests.common.permission_suite import build_world
from tests.common.test_every_route import ROUTES, SECRET, console_routes
from tests.common.test_every_route import send as send_rule
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Agent, AgentToken, PromotionRequest, TrustChange
from trust_app.services.agents import agent_create, person_create
from trust_app.services.teams import team_create

TEAMS = ("team-a", "team-b")
ROLES = ("operator", "admin", "auditor")
# URL kwargs that name something belonging to one agent, hence to one team.
TEAM_KWARGS = frozenset(
    {"agent_id", "token_id", "request_id", "promotion_id", "grant_id", "event_id", "invocation_id"}
)
REFUSED = (403, 404)


def build_teams() -> dict[str, dict[str, str]]:
    """Both teams' objects (ids as text, by kind) and the people of every role."""
    objects: dict[str, dict[str, str]] = {}
    now = timezone.now()
    for team in TEAMS:
        team_create(name=team)
        made = agent_create(
            name=f"{team}-agent", access_level="standard", autonomy="locked", team=team
        )
        agent = made.agent
        call = CallRequest(tool="test_echo", arguments={"text": f"hello from {team}"})
        invocation = invocation_submit(agent=agent, call=call).invocation
        request = ApprovalRequest.objects.select_related("invocation__agent").get(
            invocation=invocation
        )
        promotion = PromotionRequest.objects.create(
            agent=agent, track="web", from_level="standard", to_level="elevated", created_at=now
        )
        grant = ApprovalGrant.objects.create(
            agent=agent,
            tool="test_echo",
            pattern={"text": "*"},
            granted_by_name="suite",
            expires_at=now + timedelta(hours=1),
        )
        event = AuditEvent.objects.filter(agent_id=agent.id).order_by("id").first()
        assert event is not None
        objects[team] = {
            "agent": str(agent.id),
            "agent_name": agent.name,
            "token": str(AgentToken.objects.get(agent=agent).id),
            "token_public": AgentToken.objects.get(agent=agent).public_id,
            "request": str(request.id),
            "tier": request.risk_tier,
            "group": row_facts(request).group,
            "promotion": str(promotion.id),
            "grant": str(grant.id),
            "event": str(event.id),
            "invocation": str(invocation.id),
            "digest": "0" * 64,  # a picture's name: none is kept for it
        }
    for role in ROLES:
        person_create(username=f"a-{role}", role=role, password=None, team="team-a")
        person_create(username=f"org-{role}", role=role, password=None)
    return objects


def as_person(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def body_of(response: Any) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return bytes(response.content)


# What a change to an object looks like, read before and after a request.
def _request_state(ids: dict[str, str]) -> Any:
    return ApprovalRequest.objects.filter(id=ids["request"]).values_list("status", "approvals")[0]


def _promotion_state(ids: dict[str, str]) -> Any:
    return PromotionRequest.objects.filter(id=ids["promotion"]).values_list("status")[0]


def _grant_state(ids: dict[str, str]) -> Any:
    return ApprovalGrant.objects.filter(id=ids["grant"]).values_list("revoked_at")[0]


def _agent_state(ids: dict[str, str]) -> Any:
    return Agent.objects.filter(id=ids["agent"]).values_list("access_level", "autonomy")[0]


def _tokens_state(ids: dict[str, str]) -> Any:
    rows = AgentToken.objects.filter(agent_id=ids["agent"]).order_by("created_at")
    return list(rows.values_list("id", "revoked_at", "rotated_at"))


def _trust_state(ids: dict[str, str]) -> Any:
    return TrustChange.objects.filter(agent_id=ids["agent"]).count()


STATES: dict[str, Callable[[dict[str, str]], Any]] = {
    "request": _request_state,
    "promotion": _promotion_state,
    "grant": _grant_state,
    "agent": _agent_state,
    "tokens": _tokens_state,
    "trust": _trust_state,
}


@dataclass(frozen=True)
class TeamRoute:
    """One method of a route about one team's object."""

    role: str  # the role that reaches the route at all
    method: str = "get"
    kwargs: dict[str, str] = field(default_factory=dict)  # kwarg -> object kind
    ok: int = 200
    api: bool = False
    data: dict[str, Any] = field(default_factory=dict)  # "{kind}" names an object's id
    refused: tuple[int, ...] = REFUSED
    changes: str | None = None  # the STATES entry the route changes when it succeeds
    shows: str | None = None  # the object kind whose id the answer shows when it succeeds


DENY = {"decision": "deny", "reason": "suite"}

# fmt: off
TEAM_OBJECTS: dict[str, list[TeamRoute]] = {
    "approvals-call": [TeamRoute("operator", kwargs={"request_id": "request"}, shows="request")],
    # What a remembered pattern would cover: the form of the person's own team's request.
    "approvals-pattern": [TeamRoute("operator", kwargs={"request_id": "request"})],
    # The suite's requests depend on no picture (404 past the team check); the picture
    # itself, to its team and not another's: tests/tools_app/builtin/browser/
    # test_pictures_pipeline.py.
    "approvals-picture": [TeamRoute("operator", kwargs={"request_id": "request"}, ok=404)],
    "approvals-group": [
        # A group's members: the page answers either way; the other team's are not in it.
        TeamRoute("operator", kwargs={"key": "group"}, refused=(200,), shows="request"),
    ],
    # The inbox's decisions answer in the page: a refusal is a message, and nothing changes.
    "approvals-decide": [TeamRoute(
        "operator", "post", data={**DENY, "only": "{request}"}, refused=(200,), changes="request",
    )],
    "approvals-promotion-decide": [TeamRoute(
        "operator", "post", data={"decision": "deny", "only": "{promotion}",
                                  "reason-{promotion}": "suite"},
        refused=(200,), changes="promotion",
    )],
    "approvals-grant-revoke": [TeamRoute(
        "operator", "post", kwargs={"grant_id": "grant"}, refused=(200,), changes="grant",
    )],
    "trust-agent": [TeamRoute("operator", kwargs={"agent_id": "agent"})],
    # Without the confirm box an admin is sent back to the page; nothing changes.
    "trust-agent-reset": [TeamRoute("admin", "post", kwargs={"agent_id": "agent"}, ok=302)],
    "trust-promotion-decide": [TeamRoute(
        "operator", "post", kwargs={"promotion_id": "promotion"}, data=DENY, ok=302,
        changes="promotion",
    )],
    "agent-detail": [TeamRoute("operator", kwargs={"agent_id": "agent"}, shows="agent_name")],
    "agent-edit": [
        TeamRoute("admin", kwargs={"agent_id": "agent"}, ok=302),
        TeamRoute("admin", "post", kwargs={"agent_id": "agent"}, ok=302, changes="agent",
                  data={"access_level": "restricted", "autonomy": "semi", "action": "save"}),
    ],
    "agent-explain": [TeamRoute(
        "admin", "post", kwargs={"agent_id": "agent"},
        data={"tool": "read_file", "arguments": '{"path": "notes.txt"}'},
    )],
    "agent-tokens": [TeamRoute(
        "admin", "post", kwargs={"agent_id": "agent"}, ok=302, changes="tokens",
    )],
    "agent-token-new": [TeamRoute("admin", kwargs={"agent_id": "agent"})],
    "agent-token-rotate": [TeamRoute(
        "admin", "post", kwargs={"agent_id": "agent", "token_id": "token"}, ok=302,
        changes="tokens",
    )],
    "agent-token-revoke": [TeamRoute(
        "admin", "post", kwargs={"agent_id": "agent", "token_id": "token"}, ok=302,
        data={"confirm": "{token_public}"}, changes="tokens",
    )],
    # The agent's desktop (the suite's config has no desktop section: no panel, and taking
    # over and acting say the tools are off, past the team check); with a session:
    # tests/tools_app/views/test_desktop.py.
    "agent-desktop": [TeamRoute("operator", kwargs={"agent_id": "agent"})],
    "agent-desktop-picture": [TeamRoute(
        "operator", kwargs={"agent_id": "agent", "sha256": "digest"}, ok=404,
    )],
    "agent-desktop-take-over": [TeamRoute("admin", "post", kwargs={"agent_id": "agent"}, ok=409)],
    "agent-desktop-hand-back": [TeamRoute("admin", "post", kwargs={"agent_id": "agent"}, ok=302)],
    "agent-desktop-act": [TeamRoute(
        "admin", "post", kwargs={"agent_id": "agent"}, ok=409, data={"action": "key", "keys": "a"},
    )],
    "audit-event": [TeamRoute("auditor", kwargs={"event_id": "event"}, shows="agent_name")],
    # The suite's events name no picture (404 past the team check); the picture itself, to
    # its team and not another's: tests/audit_app/views/test_pictures.py.
    "audit-event-picture": [TeamRoute("auditor", kwargs={"event_id": "event"}, ok=404)],
    "audit-invocation": [TeamRoute(
        "auditor", kwargs={"invocation_id": "invocation"}, shows="agent_name",
    )],
    "api-agent-explain": [TeamRoute(
        "admin", "post", kwargs={"agent_id": "agent"}, api=True,
        data={"tool": "read_file", "arguments": {"path": "notes.txt"}},
    )],
    # An empty body: past the team check, the body is refused (nothing is recorded).
    "api-agent-task-outcomes": [TeamRoute(
        "operator", "post", kwargs={"agent_id": "agent"}, api=True, ok=400,
    )],
    "api-agent-trust": [TeamRoute("operator", kwargs={"agent_id": "agent"}, api=True)],
    "api-agent-trust-reset": [TeamRoute(
        "admin", "post", kwargs={"agent_id": "agent"}, api=True, data={"reason": "suite"},
        changes="trust",
    )],
    "api-invocation-feedback": [TeamRoute(
        "operator", "post", kwargs={"invocation_id": "invocation"}, api=True, ok=400,
    )],
    "api-promotion-decide": [TeamRoute(
        "operator", "post", kwargs={"promotion_id": "promotion"}, api=True, data=DENY,
        changes="promotion",
    )],
    "api-approval": [TeamRoute(
        "operator", kwargs={"request_id": "request"}, api=True, shows="request",
    )],
    "api-approval-decide": [TeamRoute(
        "operator", "post", kwargs={"request_id": "request"}, api=True, data=DENY,
        changes="request",
    )],
}


@dataclass(frozen=True)
class TeamList:
    """A list of teams' objects: a person of one team sees theirs and no other team's."""

    role: str
    shows: str  # the object kind each team's entry is recognised by
    query: dict[str, str] = field(default_factory=dict)


TEAM_LISTS: dict[str, TeamList] = {
    "approvals-inbox": TeamList("operator", "request"),
    "approvals-more": TeamList("operator", "request", {"tier": "{tier}", "after": ""}),
    "approvals-select": TeamList("operator", "request"),
    "api-approvals": TeamList("operator", "request", {"status": "pending"}),
    "api-promotions": TeamList("operator", "promotion"),
    "agent-list": TeamList("operator", "agent_name"),
    "audit-list": TeamList("auditor", "agent_name"),
    "audit-export-csv": TeamList("auditor", "agent_name"),
    "audit-export-jsonl": TeamList("auditor", "agent_name"),
    "api-audit-events": TeamList("auditor", "agent_name"),
}

# What every team shares: an admin of the organisation changes it, an admin of a team
# does not (the route's own rule in test_every_route says what the organisation's gets).
ORG_WIDE = (
    "tool-switch", "upstream-review", "upstream-decide", "connection-list", "secret-list",
    "secret-add", "secret-rotate-keys", "secret-rotate", "secret-revoke", "secret-grant",
    "secret-ungrant",
)

NOT_TEAMS: dict[str, str] = {
    **{name: "open to everyone: no person's role is asked" for name in (
        "healthz", "metrics", "login", "logout", "sso-start", "sso-callback", "api-schema",
        "api-docs", "slack-actions", "web-manifest", "service-worker",
    )},
    **{name: "an agent acts for itself with its own token" for name in (
        "api-me", "api-tools", "api-tool", "api-tool-resource", "api-invocations",
        "api-invocation-batch", "api-invocation", "api-invocation-cancel",
    )},
    "dashboard": "figures; what waits is counted for the viewer's teams (test_teams_dashboard)",
    "my-decisions": "a person's own decisions",
    "push-page": "a person's own push subscriptions (what a push carries: test_push)",
    "push-subscription": "a person's own push subscription",
    "tool-list": "the tools every agent may be given",
    "audit-verify": "the hash chain of the whole record: nothing of any event is shown",
    "audit-chain-status": "the chain's status: nothing of any event is shown",
}
# fmt: on


def test_every_route_is_classified() -> None:
    classified = [*TEAM_OBJECTS, *TEAM_LISTS, *ORG_WIDE, *NOT_TEAMS]
    twice = sorted({name for name in classified if classified.count(name) > 1})
    assert not twice, f"classified twice: {twice}"
    assert set(classified) == set(ROUTES), {
        "not classified": sorted(set(ROUTES) - set(classified)),
        "no such route": sorted(set(classified) - set(ROUTES)),
    }
    for name, route, _view in console_routes():
        if name not in ROUTES or not set(ROUTES[name].kwargs) & TEAM_KWARGS:
            continue
        people = [r for _, r in ROUTES[name].rules() if r.kind in ("page", "people_api")]
        if people:
            assert name in TEAM_OBJECTS, f"{name} ({route}) names a team's object"


def object_cases() -> Iterator[Any]:
    for name, rules in TEAM_OBJECTS.items():
        for index, rule in enumerate(rules):
            yield pytest.param(name, index, id=f"{name}-{rule.method}")


def _url_and_data(name: str, rule: TeamRoute, ids: dict[str, str]) -> tuple[str, dict[str, Any]]:
    url = reverse(name, kwargs={k: ids[kind] for k, kind in rule.kwargs.items()})
    return url, {_named(key, ids): _named(value, ids) for key, value in rule.data.items()}


def _named(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with each ``{kind}`` replaced by that object's id."""
    if not isinstance(value, str):
        return value
    for kind, found in ids.items():
        value = value.replace("{" + kind + "}", found)
    return value


def _send(client: Client, name: str, rule: TeamRoute, ids: dict[str, str]) -> Any:
    url, data = _url_and_data(name, rule, ids)
    if rule.method == "get":
        return client.get(url, data)
    if rule.api:
        return client.post(url, data, content_type="application/json")
    return client.post(url, data)


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "index"), list(object_cases()))
def test_a_person_of_one_team_reaches_only_its_objects(name: str, index: int) -> None:
    rule = TEAM_OBJECTS[name][index]
    objects = build_teams()
    own, other = objects["team-a"], objects["team-b"]
    state = STATES[rule.changes] if rule.changes else None
    person = as_person(f"a-{rule.role}")

    before = state(other) if state else None
    refused = _send(person, name, rule, other)
    assert refused.status_code in rule.refused, (name, refused.status_code, body_of(refused)[:300])
    if rule.api:
        assert refused.json()["error"]["code"] in ("forbidden", "not_found")
    if state:
        assert state(other) == before, f"{name}: another team's object changed"
    # Nothing of it is told (its id may be, where the person sent it).
    assert other["agent_name"].encode() not in body_of(refused), f"{name} tells of team-b's"
    if rule.shows and rule.shows != "request":
        assert other[rule.shows].encode() not in body_of(refused), f"{name} shows team-b's"

    # Control: the same person on their own team's object.
    before = state(own) if state else None
    allowed = _send(person, name, rule, own)
    assert allowed.status_code == rule.ok, (name, allowed.status_code, body_of(allowed)[:300])
    if state:
        assert state(own) != before, f"{name}: the person's own team's object did not change"
    if rule.shows:
        assert own[rule.shows].encode() in body_of(allowed)

    # The organisation's person of the same role reaches the other team's object.
    before = state(other) if state else None
    everywhere = _send(as_person(f"org-{rule.role}"), name, rule, other)
    assert everywhere.status_code == rule.ok, (name, everywhere.status_code)
    if state:
        assert state(other) != before
    if rule.shows:
        assert other[rule.shows].encode() in body_of(everywhere)


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(TEAM_LISTS))
def test_a_list_shows_a_person_only_their_teams_objects(name: str) -> None:
    listing = TEAM_LISTS[name]
    objects = build_teams()
    own, other = objects["team-a"], objects["team-b"]
    query = {key: _named(value, own) for key, value in listing.query.items()}
    url = reverse(name)

    mine = as_person(f"a-{listing.role}").get(url, query)
    assert mine.status_code == 200, (name, mine.status_code)
    body = body_of(mine)
    assert own[listing.shows].encode() in body, f"{name}: the person's own team's is missing"
    assert other[listing.shows].encode() not in body, f"{name} shows another team's"

    everything = body_of(as_person(f"org-{listing.role}").get(url, query))
    assert own[listing.shows].encode() in everything
    assert other[listing.shows].encode() in everything


@pytest.mark.django_db
@pytest.mark.parametrize("name", ORG_WIDE)
def test_what_every_team_shares_is_for_the_organisations_admins(name: str) -> None:
    world = build_world()
    secret_set(name=SECRET, value="suite-value-000000", actor=Actor.system("suite"))
    agent = Agent.objects.get(id=world["agent"])
    secret_grant(
        name=SECRET, agent=agent, tool="http_request", server="", actor=Actor.system("suite")
    )
    world["secret"] = SECRET
    team_create(name="team-a")
    person_create(username="a-admin", role="admin", password=None, team="team-a")
    route = ROUTES[name]
    url = reverse(name, kwargs={k: world.get(v, v) for k, v in route.kwargs.items()})
    for method, rule in route.rules():
        refused = send_rule(as_person("a-admin"), method, url, rule)
        assert refused.status_code == 403, (name, method, refused.status_code)
        assert b"organisation-wide" in refused.content
        # Control: an admin of the organisation gets the route's answer.
        allowed = send_rule(as_person("suite-admin"), method, url, rule)
        expected = rule.ok if isinstance(rule.ok, tuple) else (rule.ok,)
        assert allowed.status_code in expected, (name, method, allowed.status_code)


@pytest.mark.django_db
def test_a_decision_on_many_never_decides_another_teams_request() -> None:
    """Bulk: posting the other team's id beside one's own decides one's own only."""
    objects = build_teams()
    own, other = objects["team-a"]["request"], objects["team-b"]["request"]
    answer = as_person("a-operator").post(
        reverse("approvals-decide"), {"decision": "deny", "reason": "suite", "ids": [own, other]}
    )
    assert answer.status_code == 200
    assert ApprovalRequest.objects.get(id=own).status == "denied"  # control
    assert ApprovalRequest.objects.get(id=other).status == "pending"
    assert b"among your teams" in answer.content
    assert objects["team-b"]["agent_name"].encode() not in answer.content


@pytest.mark.django_db
def test_teams_dashboard_counts_what_waits_for_the_viewer() -> None:
    """Each team: one pending call and one promotion; the badge and the figure agree."""
    build_teams()
    for person, waiting in (("a-operator", 2), ("org-operator", 4)):
        page = as_person(person).get("/").content.decode()
        figure = re.search(r'id="pending-approvals"[^>]*>(\d+)<', page)
        badge = re.search(r'id="pending-count"[^>]*>(\d+)<', page)
        assert figure is not None and badge is not None, page[:500]
        assert (int(figure.group(1)), int(badge.group(1))) == (waiting, waiting), person
