"""manage.py synthorg_agents: export, plan (dry run) and apply an agents file."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from audit_app.models import AuditEvent
from audit_app.record import Actor
from secrets_app.models import SecretGrant
from secrets_app.services import secret_grant, secret_set
from trust_app.models import Agent, AgentPermissions
from trust_app.services.agents import agent_create, person_create
from trust_app.services.permissions import agent_permissions_update

pytestmark = pytest.mark.django_db

ADMIN = Actor.system("test admin")


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("synthorg_agents", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def organisation() -> dict[str, Agent]:
    """Two agents: one plain, one with lists, sub-constraints, an owner, a cap on calls at
    once and a secret grant."""
    person_create(username=f"owner-{uuid.uuid4().hex[:6]}", role="admin", password=None)
    owner = person_create(username="ops-owner", role="admin", password=None)
    plain = agent_create(name="plain-agent", access_level="restricted").agent
    rich = agent_create(
        name="rich-agent", access_level="standard", autonomy="supervised", owner=owner
    ).agent
    agent_permissions_update(
        agent=rich,
        actor=ADMIN,
        access_level="standard",
        autonomy="supervised",
        allowed=["git_push"],
        denied=["shell_command"],
        sub_constraints={"code_execution": "namespace"},
        max_concurrent_calls=6,
    )
    secret_set(name="DEPLOY_KEY", value="s3cr3t-value-for-tests", actor=ADMIN)
    secret_grant(name="DEPLOY_KEY", agent=rich, actor=ADMIN, tool="http_request")
    return {"plain": plain, "rich": rich}


def test_export_then_apply_is_a_no_op_plan(organisation: dict[str, Agent], tmp_path: Path) -> None:
    file = tmp_path / "agents.yaml"
    run("export", str(file))
    data = yaml.safe_load(file.read_text())
    rich = next(a for a in data["agents"] if a["name"] == "rich-agent")
    assert rich["denied_tools"] == ["shell_command"] and rich["allowed_tools"] == ["git_push"]
    assert rich["owner"] == "ops-owner" and rich["autonomy"] == "supervised"
    assert rich["secret_grants"] == [{"secret": "DEPLOY_KEY", "tool": "http_request"}]
    assert rich["max_concurrent_calls"] == 6
    plain = next(a for a in data["agents"] if a["name"] == "plain-agent")
    assert plain["max_concurrent_calls"] is None  # the console default, written as null
    assert "s3cr3t" not in file.read_text()  # names only, never values

    before = AuditEvent.objects.count()
    assert "plan: no changes" in run("apply", str(file), "--dry-run")
    out = run("apply", str(file))
    assert "plan: no changes" in out and "nothing to apply" in out
    assert AuditEvent.objects.count() == before


def test_the_plan_lists_each_change_and_a_dry_run_changes_nothing(
    organisation: dict[str, Agent], tmp_path: Path
) -> None:
    file = tmp_path / "agents.yaml"
    run("export", str(file))
    data = yaml.safe_load(file.read_text())
    for agent in data["agents"]:
        if agent["name"] == "plain-agent":
            agent["autonomy"] = "locked"
            agent["denied_tools"] = ["delete_file"]
        if agent["name"] == "rich-agent":
            agent["secret_grants"] = []
            agent["owner"] = None
    data["agents"].append(
        {"name": "new-agent", "access_level": "sandboxed", "autonomy": "supervised"}
    )
    file.write_text(yaml.safe_dump(data))

    before = AuditEvent.objects.count()
    plan = run("apply", str(file), "--dry-run")
    lines = [line.strip() for line in plan.splitlines()]
    assert "plan: 4 changes" in plan
    assert any(line.startswith("create") and "new-agent" in line for line in lines)
    assert any(
        line.startswith("permissions")
        and "plain-agent" in line
        and "autonomy" in line
        and "delete_file" in line
        for line in lines
    )
    assert any(line.startswith("ungrant_secret") and "DEPLOY_KEY" in line for line in lines)
    assert any(line.startswith("owner") and "rich-agent" in line for line in lines)
    assert "dry run: nothing changed" in plan
    assert AuditEvent.objects.count() == before
    assert not Agent.objects.filter(name="new-agent").exists()

    out = run("apply", str(file))
    assert out.strip().splitlines()[-1].startswith("soa_")  # the new agent's token, once
    plain = Agent.objects.get(name="plain-agent")
    assert plain.autonomy == "locked"
    assert AgentPermissions.objects.get(agent=plain).denied == ["delete_file"]
    assert Agent.objects.get(name="new-agent").access_level == "sandboxed"
    assert not SecretGrant.objects.filter(agent__name="rich-agent").exists()
    assert Agent.objects.get(name="rich-agent").owner is None
    kinds = list(AuditEvent.objects.filter(pk__gt=0).order_by("id").values_list("kind", flat=True))
    new_kinds = kinds[before:]
    for kind in ("agent.created", "agent.permissions_updated", "secret.ungranted",
                 "agent.owner_updated", "agents.applied"):  # fmt: skip
        assert kind in new_kinds, (kind, new_kinds)
    # Applied: the same file is now a no-op.
    assert "plan: no changes" in run("apply", str(file), "--dry-run")


def test_problems_are_named_by_field_and_nothing_is_applied(
    organisation: dict[str, Agent], tmp_path: Path
) -> None:
    file = tmp_path / "agents.yaml"
    file.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "agents": [
                    {"name": "plain-agent", "access_level": "restricted", "autonomy": "sometimes"},
                    {
                        "name": "broken",
                        "access_level": "godlike",
                        "denied_tools": ["no_such_tool"],
                        "colour": "blue",
                        "secret_grants": [{"secret": "MISSING", "tool": "http_request"}],
                    },
                ],
            }
        )
    )
    before = AuditEvent.objects.count()
    with pytest.raises(CommandError) as raised:
        run("apply", str(file))
    message = str(raised.value)
    assert f"{file}: agents[0].autonomy: 'sometimes' is not allowed; allowed values:" in message
    assert "agents[1].colour: unknown field; allowed fields: name, access_level" in message
    # Schema problems first; a file whose shape is right is then judged against the console.
    file.write_text(
        yaml.safe_dump(
            {
                "agents": [
                    {"name": "plain-agent", "access_level": "restricted", "autonomy": "locked"},
                    {
                        "name": "broken",
                        "access_level": "godlike",
                        "denied_tools": ["no_such_tool"],
                        "secret_grants": [{"secret": "MISSING", "tool": "http_request"}],
                    },
                ],
            }
        )
    )
    with pytest.raises(CommandError) as raised:
        run("apply", str(file))
    message = str(raised.value)
    assert "agents[1].access_level: 'godlike' is not allowed; allowed values:" in message
    assert "agents[1].denied_tools" in message
    assert "agents[1].secret_grants[0].secret: no secret named 'MISSING'" in message
    # Nothing applied, not even the valid first agent's change.
    assert Agent.objects.get(name="plain-agent").autonomy == "semi"
    assert not Agent.objects.filter(name="broken").exists()
    assert AuditEvent.objects.count() == before


def test_a_file_that_is_not_yaml_or_not_a_mapping_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "agents.yaml"
    file.write_text("agents: [unclosed")
    with pytest.raises(CommandError, match="not valid YAML"):
        run("apply", str(file), "--dry-run")
    file.write_text("- just a list")
    with pytest.raises(CommandError, match="must be a mapping"):
        run("apply", str(file), "--dry-run")


def test_the_cap_on_calls_at_once_is_planned_applied_and_audited(
    organisation: dict[str, Agent], tmp_path: Path
) -> None:
    file = tmp_path / "agents.yaml"
    run("export", str(file))
    data = yaml.safe_load(file.read_text())
    for agent in data["agents"]:
        if agent["name"] == "plain-agent":
            agent["max_concurrent_calls"] = 12
        if agent["name"] == "rich-agent":
            agent["max_concurrent_calls"] = None
    data["agents"].append(
        {"name": "new-agent", "access_level": "sandboxed", "max_concurrent_calls": 3}
    )
    file.write_text(yaml.safe_dump(data))

    plan = run("apply", str(file), "--dry-run")
    lines = [line.strip() for line in plan.splitlines()]
    assert "plan: 3 changes" in plan
    assert f"{'permissions':15} plain-agent: max_concurrent_calls: default -> 12" in lines
    assert f"{'permissions':15} rich-agent: max_concurrent_calls: 6 -> default" in lines
    # Created with its cap: no permissions change of its own follows.
    assert f"{'create':15} new-agent: sandboxed, semi, 3 calls at once" in lines
    assert Agent.objects.get(name="plain-agent").max_concurrent_calls is None

    last = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    run("apply", str(file))
    caps = dict(Agent.objects.values_list("name", "max_concurrent_calls"))
    assert caps == {"plain-agent": 12, "rich-agent": None, "new-agent": 3}
    updated = AuditEvent.objects.filter(id__gt=last, kind="agent.permissions_updated")
    changes = sorted(
        (e.agent_name, *(e.data[side]["max_concurrent_calls"] for side in ("before", "after")))
        for e in updated
    )
    assert changes == [("plain-agent", None, 12), ("rich-agent", 6, None)]
    created = AuditEvent.objects.get(kind="agent.created", agent_name="new-agent")
    assert created.data["max_concurrent_calls"] == 3
    # Exported again and applied: no change planned.
    run("export", str(file))
    assert yaml.safe_load(file.read_text())["agents"][0]["max_concurrent_calls"] == 3
    assert "plan: no changes" in run("apply", str(file), "--dry-run")


@pytest.mark.parametrize("cap", [0, 10_001, "8", True, 2.5])
def test_a_cap_out_of_bounds_or_not_a_whole_number_is_refused_by_field(
    organisation: dict[str, Agent], tmp_path: Path, cap: object
) -> None:
    file = tmp_path / "agents.yaml"
    file.write_text(
        yaml.safe_dump(
            {"agents": [{"name": "plain-agent", "access_level": "restricted",
                         "max_concurrent_calls": cap}]}
        )
    )  # fmt: skip
    before = AuditEvent.objects.count()
    with pytest.raises(CommandError) as raised:
        run("apply", str(file))
    assert (
        f"{file}: agents[0].max_concurrent_calls: {cap!r} is not allowed; allowed values: "
        "a whole number from 1 to 10000" in str(raised.value)
    )
    assert Agent.objects.get(name="plain-agent").max_concurrent_calls is None
    assert AuditEvent.objects.count() == before


def test_a_sealed_grant_round_trips_and_a_program_grant_without_hosts_is_refused(
    organisation: dict[str, Agent], tmp_path: Path
) -> None:
    file = tmp_path / "agents.yaml"
    run("export", str(file))
    data = yaml.safe_load(file.read_text())
    rich = next(a for a in data["agents"] if a["name"] == "rich-agent")
    rich["secret_grants"].append({"secret": "DEPLOY_KEY", "tool": "shell_command"})
    file.write_text(yaml.safe_dump(data))
    with pytest.raises(CommandError) as refused:
        run("apply", str(file))
    assert "secret_grants[1].hosts: a grant for shell_command names the hosts" in str(refused.value)
    assert not SecretGrant.objects.filter(tool="shell_command").exists()
    # With its hosts (written loosely, stored canonical) it is planned, applied, exported.
    rich["secret_grants"][1]["hosts"] = ["API.Example.com"]
    rich["secret_grants"][1]["inject"] = "header:X-Api-Key"
    file.write_text(yaml.safe_dump(data))
    plan = run("apply", str(file))
    assert "DEPLOY_KEY for shell_command sealed for api.example.com (header:X-Api-Key)" in plan
    grant = SecretGrant.objects.get(tool="shell_command")
    assert (grant.hosts, grant.inject) == (["api.example.com"], "header:X-Api-Key")
    run("export", str(file))
    again = next(a for a in yaml.safe_load(file.read_text())["agents"] if a["name"] == "rich-agent")
    assert {
        "secret": "DEPLOY_KEY",
        "tool": "shell_command",
        "hosts": ["api.example.com"],
        "inject": "header:X-Api-Key",
    } in again["secret_grants"]
    assert "plan: no changes" in run("apply", str(file), "--dry-run")
    # A changed host is a change of the grant, not a second grant.
    again["secret_grants"][-1]["hosts"] = ["api.example.org"]
    data = yaml.safe_load(file.read_text())
    for agent in data["agents"]:
        if agent["name"] == "rich-agent":
            agent["secret_grants"] = again["secret_grants"]
    file.write_text(yaml.safe_dump(data))
    run("apply", str(file))
    assert SecretGrant.objects.get(tool="shell_command").hosts == ["api.example.org"]


def test_a_key_given_twice_is_refused_naming_its_line(
    organisation: dict[str, Agent], tmp_path: Path
) -> None:
    file = tmp_path / "agents.yaml"
    # Attack: a reviewer reads the first access_level, YAML would keep the second.
    file.write_text(
        "version: 1\n"
        "agents:\n"
        "  - name: plain-agent\n"
        "    access_level: restricted\n"
        "    access_level: elevated\n"
    )
    with pytest.raises(CommandError) as raised:
        run("apply", str(file), "--dry-run")
    assert f"{file}: line 5: `access_level` is given twice in one mapping (first on line 4)" in str(
        raised.value
    )
    # The same twice at the top level, and a name given twice in an inline mapping.
    file.write_text("version: 1\nagents: []\nversion: 1\n")
    with pytest.raises(CommandError, match="line 3: `version` is given twice"):
        run("apply", str(file), "--dry-run")
    file.write_text("agents:\n  - {name: a, name: b, access_level: standard}\n")
    with pytest.raises(CommandError, match="line 2: `name` is given twice"):
        run("apply", str(file), "--dry-run")
    # An alias would let one line stand for many agents: refused, naming its line.
    file.write_text("agents:\n  - &one {name: plain-agent, access_level: restricted}\n  - *one\n")
    with pytest.raises(CommandError, match=r"line 3: an alias \(\*one\) is not accepted"):
        run("apply", str(file), "--dry-run")
    # Positive control: each key once, the change is planned.
    file.write_text("agents:\n  - name: plain-agent\n    access_level: elevated\n")
    plan = run("apply", str(file), "--dry-run")
    assert f"{'permissions':15} plain-agent: access_level: 'restricted' -> 'elevated'" in [
        line.strip() for line in plan.splitlines()
    ]
    assert Agent.objects.get(name="plain-agent").access_level == "restricted"


def test_fields_left_out_are_kept_and_the_plan_says_so(
    organisation: dict[str, Agent], tmp_path: Path
) -> None:
    file = tmp_path / "agents.yaml"
    # Only name and level: the rich agent keeps its autonomy, lists, owner, cap and grant.
    file.write_text(
        yaml.safe_dump(
            {"agents": [{"name": "rich-agent", "access_level": "elevated"},
                        {"name": "fresh-agent", "access_level": "sandboxed"}]}
        )
    )  # fmt: skip
    plan = run("apply", str(file), "--dry-run")
    lines = [line.strip() for line in plan.splitlines()]
    assert "plan: 2 changes" in plan, plan
    assert f"{'permissions':15} rich-agent: access_level: 'standard' -> 'elevated'" in lines
    assert f"{'create':15} fresh-agent: sandboxed, semi" in lines  # new: the defaults
    assert (
        "left as they are (not in the file): rich-agent: autonomy, owner, team, active, "
        "allowed_tools, denied_tools, sub_constraints, max_concurrent_calls, secret_grants"
    ) in lines
    assert not any(line.startswith("left as they are") and "fresh-agent" in line for line in lines)
    run("apply", str(file))
    rich = Agent.objects.select_related("owner").get(name="rich-agent")
    assert rich.access_level == "elevated" and rich.autonomy == "supervised"
    assert rich.owner is not None and rich.owner.username == "ops-owner"
    assert rich.max_concurrent_calls == 6
    permissions = AgentPermissions.objects.get(agent=rich)
    assert permissions.allowed == ["git_push"] and permissions.denied == ["shell_command"]
    assert permissions.sub_constraints == {"code_execution": "namespace"}
    assert SecretGrant.objects.filter(agent=rich, secret__name="DEPLOY_KEY").exists()
    # Positive control: the same fields written out are applied, to the default included.
    file.write_text(
        yaml.safe_dump(
            {"agents": [{"name": "rich-agent", "access_level": "elevated", "autonomy": "semi",
                         "owner": None, "max_concurrent_calls": None, "secret_grants": []}]}
        )
    )  # fmt: skip
    plan = run("apply", str(file), "--dry-run")
    assert (
        "autonomy: 'supervised' -> 'semi'" in plan and "max_concurrent_calls: 6 -> default" in plan
    )
    assert "ungrant_secret" in plan and "'ops-owner' -> None" in plan
    assert "rich-agent: team, active, allowed_tools, denied_tools, sub_constraints" in plan


def test_a_file_too_long_or_with_too_many_agents_is_refused_before_planning(
    organisation: dict[str, Agent], tmp_path: Path
) -> None:
    from trust_app.agents_code.schema import AGENTS_FILE_MAX_AGENTS, AGENTS_FILE_MAX_BYTES

    file = tmp_path / "agents.yaml"
    entry = "  - {name: a%d, access_level: standard}\n"
    many = "agents:\n" + "".join(entry % n for n in range(AGENTS_FILE_MAX_AGENTS + 1))
    assert len(many) < AGENTS_FILE_MAX_BYTES  # refused for its count, not its length
    file.write_text(many)
    with pytest.raises(CommandError) as raised:
        run("apply", str(file), "--dry-run")
    assert (
        f"{file}: agents: {AGENTS_FILE_MAX_AGENTS + 1} agents listed; a file may list at most "
        f"{AGENTS_FILE_MAX_AGENTS}" in str(raised.value)
    )
    # 60,000 agents in 2.7 MB: refused by its length, at once.
    file.write_text("agents:\n" + "".join(entry % n for n in range(60_000)))
    size = file.stat().st_size
    assert size > AGENTS_FILE_MAX_BYTES
    with pytest.raises(CommandError) as raised:
        run("apply", str(file), "--dry-run")
    assert (
        f"{file}: the file is {size} bytes; an agents file may hold at most "
        f"{AGENTS_FILE_MAX_BYTES} bytes" in str(raised.value)
    )
    assert not Agent.objects.filter(name="a0").exists()
    # Positive control: the most agents a file may list are planned.
    file.write_text(many.rsplit("  - ", 1)[0])
    plan = run("apply", str(file), "--dry-run")
    assert f"plan: {AGENTS_FILE_MAX_AGENTS} changes" in plan
