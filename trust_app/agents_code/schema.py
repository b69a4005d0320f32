"""The agents file: its shape, checked field by field (pure: no Django imports).

```yaml
version: 1
agents:
  - name: builder
    access_level: standard
    autonomy: semi
    owner: alice
    team: payments             # the default team when a new agent leaves it out
    workspace: /srv/synthorg/workspaces/builder
    active: true
    allowed_tools: []
    denied_tools: [shell_command]
    sub_constraints: {}
    max_concurrent_calls: 8    # null: the console default
    secret_grants:
      - {secret: GITHUB_TOKEN, tool: http_request}
```

Every field but ``name`` and ``access_level`` may be left out: a new agent takes the
default, an existing one keeps what it has (the plan lists what is kept). A key given
twice in one mapping is refused (a reader sees the first, YAML keeps the last), and so
are anchors and aliases (the file is read by reviewers as written). The file is at most
AGENTS_FILE_MAX_BYTES long and lists at most AGENTS_FILE_MAX_AGENTS agents.
"""

from __future__ import annotations

from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from common.config.errors import ConfigError, ConfigProblem, problems_from
from common.strict import StrictModel
from common.vocabulary.sealing import SealingRuleError, parse_injection, sealed_hosts_display
from trust_app.concurrency import max_concurrent_calls_problem

AUTONOMY_VALUES = ("full", "semi", "supervised", "locked")
# Bounds on one file: planning reads the database per agent. Agents not in a file are
# left alone, so a larger organisation is applied in several files.
AGENTS_FILE_MAX_BYTES = 1024 * 1024
AGENTS_FILE_MAX_AGENTS = 1000


class SecretGrantEntry(StrictModel):
    """One secret an agent may use: by name only, with one tool or one upstream server;
    ``hosts`` and ``inject`` seal it (the console adds it to requests to those hosts)."""

    secret: str = Field(min_length=1, max_length=100)
    tool: str = ""
    server: str = ""
    hosts: tuple[str, ...] = ()
    inject: str = ""

    @model_validator(mode="after")
    def _one_use(self) -> SecretGrantEntry:
        if bool(self.tool) == bool(self.server):
            raise ValueError("name either a tool or a server, not both and not neither")
        try:
            hosts = sealed_hosts_display(self.hosts)
            inject = parse_injection(self.inject).display() if hosts or self.inject else ""
        except SealingRuleError as exc:
            raise ValueError(str(exc)) from exc
        # Canonical, so a plan compares what the console would store.
        object.__setattr__(self, "hosts", hosts)
        object.__setattr__(self, "inject", inject)
        return self

    def sealing(self) -> tuple[tuple[str, ...], str]:
        return self.hosts, self.inject

    def key(self) -> tuple[str, str, str]:
        return (self.secret, self.tool, self.server)


class AgentEntry(StrictModel):
    name: str = Field(min_length=1, max_length=100)
    access_level: str
    autonomy: Literal["full", "semi", "supervised", "locked"] = "semi"
    owner: str | None = None
    # The team the agent belongs to (its operators decide its calls; its admins edit it).
    team: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_-]{0,99}$")
    # Used when the agent is created; an existing agent's workspace is never moved.
    workspace: str | None = None
    active: bool = True
    allowed_tools: tuple[str, ...] = ()
    denied_tools: tuple[str, ...] = ()
    sub_constraints: dict[str, Any] = Field(default_factory=dict)
    # Calls of the agent that run at once; null: the console default. The rest queue.
    max_concurrent_calls: int | None = None
    secret_grants: tuple[SecretGrantEntry, ...] = ()

    @field_validator("max_concurrent_calls", mode="before")
    @classmethod
    def _cap_in_bounds(cls, value: object) -> object:
        # Strict: "8", 8.0 or true is refused, not read as a number.
        problem = max_concurrent_calls_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _grants_once(self) -> AgentEntry:
        keys = [g.key() for g in self.secret_grants]
        if len(keys) != len(set(keys)):
            raise ValueError("secret_grants: the same grant is listed twice")
        return self


class AgentsFile(StrictModel):
    version: Literal[1] = 1
    agents: tuple[AgentEntry, ...] = ()

    @model_validator(mode="after")
    def _names_once(self) -> AgentsFile:
        seen: set[str] = set()
        for agent in self.agents:
            if agent.name in seen:
                raise ValueError(f"agents: {agent.name!r} is listed twice; list each agent once")
            seen.add(agent.name)
        return self


class _Refused(yaml.MarkedYAMLError):
    """Something the agents file does not accept, at a line of it."""

    def __init__(self, mark: yaml.Mark, message: str) -> None:
        super().__init__(problem=message, problem_mark=mark)
        self.line = mark.line + 1
        self.message = message


class _AgentsLoader(yaml.SafeLoader):
    """safe_load, refusing a key given twice in one mapping and any alias."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(
                event.start_mark,
                f"an alias (*{event.anchor}) is not accepted; write the value out "
                "(the file is reviewed as it reads)",
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    earlier = first_line.get(key)
                except TypeError:  # an unhashable key: SafeLoader refuses it itself
                    continue
                if earlier is not None:
                    raise _Refused(
                        key_node.start_mark,
                        f"`{key}` is given twice in one mapping (first on line {earlier}); "
                        "give it once",
                    )
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def agents_file_size_problem(size: int, *, max_bytes: int = AGENTS_FILE_MAX_BYTES) -> str:
    """Why a file of ``size`` bytes is refused, or "" when it is not too long."""
    if size <= max_bytes:
        return ""
    return (
        f"the file is {size} bytes; an agents file may hold at most {max_bytes} bytes "
        "(agents not in a file are left alone: apply a larger organisation in several files)"
    )


def agents_file_parse(
    text: str,
    *,
    source: str,
    max_bytes: int = AGENTS_FILE_MAX_BYTES,
    max_agents: int = AGENTS_FILE_MAX_AGENTS,
) -> AgentsFile:
    """The file's content checked; ConfigError naming every problem by field (or line)."""
    too_long = agents_file_size_problem(len(text.encode("utf-8")), max_bytes=max_bytes)
    if too_long:
        raise ConfigError(source, (ConfigProblem("", too_long),))
    try:
        data = yaml.load(text, Loader=_AgentsLoader)  # noqa: S506 - a SafeLoader
    except _Refused as exc:
        raise ConfigError(source, (ConfigProblem("", f"line {exc.line}: {exc.message}"),)) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(source, (ConfigProblem("", f"not valid YAML: {exc}"),)) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            source, (ConfigProblem("", "the file must be a mapping with `version` and `agents`"),)
        )
    agents = data.get("agents")
    if isinstance(agents, list) and len(agents) > max_agents:
        raise ConfigError(source, (ConfigProblem(
            "agents",
            f"{len(agents)} agents listed; a file may list at most {max_agents} (agents not "
            "in a file are left alone: apply a larger organisation in several files)",
        ),))  # fmt: skip
    try:
        return AgentsFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, problems_from(exc)) from exc


def agents_file_dump(agents_file: AgentsFile) -> str:
    """The file as YAML, fields in a fixed order so a diff shows only what changed."""
    data = agents_file.model_dump(mode="json")
    for agent in data["agents"]:
        agent["secret_grants"] = [
            {k: list(v) if isinstance(v, tuple) else v for k, v in grant.items() if v}
            for grant in agent["secret_grants"]
        ]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
