"""Loading the YAML config: defaults, the seed examples, and typos that must be errors."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from common.config import ConfigError, SynthOrgConfig, load_config, parse_config
from trust_app.policy import Outcome, build_agent_policy, decide
from trust_app.policy.tool_view import ToolView


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "synthorg.yaml"
    path.write_text(dedent(text), encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    # Every line names the file.
    assert all(line.startswith(f"{path}: ") for line in message.splitlines())
    return message


def test_missing_file_gives_seed_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.yaml")
    assert config == SynthOrgConfig()
    levels = config.access_levels()
    assert list(levels) == ["sandboxed", "restricted", "standard", "elevated", "custom"]
    assert levels["sandboxed"].network.value == "none"
    assert levels["restricted"].git.value == "read_and_branch"
    assert levels["standard"].terminal.value == "restricted_commands"
    assert levels["elevated"].deployment is True
    assert config.trust.strategy == "disabled"
    assert config.autonomy.default.value == "semi"


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "")) == SynthOrgConfig()


def test_seed_tool_access_example_loads(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
            tool_access:
              levels:
                sandboxed:
                  description: "No external access. Isolated workspace."
                  file_system: "workspace_only"
                  code_execution: "containerized"
                  network: "none"
                  git: "local_only"
                restricted:
                  description: "Limited external access with approval."
                  file_system: "project_directory"
                  code_execution: "containerized"
                  network: "allowlist_only"
                  git: "read_and_branch"
                  requires_approval: ["deploy", "db:mutate", "db:admin"]
                standard:
                  file_system: "project_directory"
                  network: "open"
                  git: "full"
                  terminal: "restricted_commands"
                elevated:
                  file_system: "full"
                  terminal: "full"
                  deployment: true
                custom:
                  description: "Per-agent custom configuration."
            """,
        )
    )
    assert config.access_levels()["restricted"].requires_approval == (
        "deploy",
        "db:mutate",
        "db:admin",
    )


def test_level_overrides_reach_the_decision_engine(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
            tool_access:
              custom_action_types: ["tool:audit"]
              levels:
                standard:
                  requires_approval: ["code:write", "tool:audit"]
            """,
        )
    )
    policy = build_agent_policy(
        name="a", level="standard", levels=config.access_levels(), workspace="/w"
    )
    writer = ToolView.build(
        name="write_file", category="file_system", action_type="code:write", safety_class="write"
    )
    auditor = ToolView.build(
        name="audit", category="memory", action_type="tool:audit", safety_class="read"
    )
    assert decide(policy, writer).outcome is Outcome.REQUIRE_APPROVAL
    assert decide(policy, auditor).outcome is Outcome.REQUIRE_APPROVAL
    # Levels not mentioned keep their seed defaults.
    assert config.access_levels()["sandboxed"] == SynthOrgConfig().access_levels()["sandboxed"]


TYPOS = [
    (
        "tool_access:\n  levels:\n    restricted:\n      requires_aproval: [deploy]\n",
        "tool_access.levels.restricted.requires_aproval",
        "requires_approval",
    ),
    (
        "tool_access:\n  levels:\n    standard:\n      network: opne\n",
        "tool_access.levels.standard.network",
        "'allowlist_only'",
    ),
    (
        "tool_access:\n  levels:\n    standard:\n      requires_approval: [db:mutate, dbb:x]\n",
        "tool_access.levels.standard.requires_approval[1]",
        "db:mutate",
    ),
    (
        "tool_access:\n  levels:\n    standard:\n      requires_approval: [db:mutate_x]\n",
        "tool_access.levels.standard.requires_approval[0]",
        "db:mutate",
    ),
    (
        "tool_access:\n  levels:\n    superuser: {}\n",
        "tool_access.levels.superuser",
        "'sandboxed'",
    ),
    (
        "tool_access:\n  levels:\n    standard:\n      categories: [file_sytem]\n",
        "tool_access.levels.standard.categories[0]",
        "'file_system'",
    ),
    (
        "tool_access:\n  levels:\n    standard:\n      allowed_hosts: ['http://x']\n",
        "tool_access.levels.standard.allowed_hosts",
        "",
    ),
    ("tool_acess: {}\n", "tool_acess", "tool_access"),
    ("autonomy:\n  default: yolo\n", "autonomy.default", "'supervised'"),
    (
        "autonomy:\n  presets:\n    semi:\n      human_approval: [deploy:prod]\n",
        "autonomy.presets.semi.human_approval[0]",
        "deploy:production",
    ),
    (
        "autonomy:\n  presets:\n    semi:\n      human_aproval: [deploy]\n",
        "autonomy.presets.semi.human_aproval",
        "human_approval",
    ),
    (
        "approval:\n  rules:\n    - match: {action_type: code:wrte}\n      disposition: deny\n",
        "approval.rules[0].match.action_type",
        "code:write",
    ),
    (
        "approval:\n  rules:\n    - match: {category: databse}\n      disposition: deny\n",
        "approval.rules[0].match.category",
        "'database'",
    ),
    (
        "approval:\n  rules:\n    - match: {tool: x}\n      disposition: require_aproval\n",
        "approval.rules[0].disposition",
        "'require_approval'",
    ),
    ("trust:\n  strategy: weigthed\n", "trust.strategy", "'weighted'"),
    ("trust:\n  initial_level: standard\n", "trust.strategy", "'disabled'"),
    ("trust:\n  strategy: disabled\n  initial_level: root\n", "trust.initial_level", "'elevated'"),
    ("tools:\n  read_file:\n    enabled: maybe\n", "tools.read_file.enabled", "bool"),
    (
        "mcp_servers:\n  - {name: a, transport: sse, url: 'https://x.example'}\n",
        "mcp_servers[0].transport",
        "'stdio'",
    ),
]


@pytest.mark.parametrize(("text", "field", "allowed"), TYPOS)
def test_typos_name_the_file_the_field_and_the_allowed_values(
    tmp_path: Path, text: str, field: str, allowed: str
) -> None:
    message = problems(tmp_path, text)
    assert f": {field}" in message, message
    assert allowed in message, message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    message = problems(
        tmp_path,
        """
        autonomy: {default: yolo}
        approval: {rules: [{match: {tool: x}, disposition: nope}]}
        """,
    )
    assert len(message.splitlines()) == 2


def test_custom_action_types_are_usable_everywhere_and_checked(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
            tool_access: {custom_action_types: ["ci:run"]}
            autonomy: {presets: {semi: {human_approval: ["ci", "ci:run"]}}}
            approval: {rules: [{match: {action_type: "ci:run"}, disposition: require_approval,
                                required_approvals: 2}]}
            """,
        )
    )
    assert "ci:run" in config.action_types().known
    message = problems(tmp_path, 'tool_access: {custom_action_types: ["ci:run:now", "x"]}\n')
    assert "custom_action_types" in message
    assert "exactly one ':'" in message


def test_duplicate_yaml_keys_are_refused(tmp_path: Path) -> None:
    message = problems(tmp_path, "approval: {}\napproval: {rules: []}\n")
    assert "duplicate key 'approval'" in message


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    message = problems(tmp_path, "tool_access:\n  levels: [\n")
    assert "invalid YAML" in message
    assert "line" in message


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    assert "mapping" in problems(tmp_path, "- a\n- b\n")


def test_approval_rule_shape(tmp_path: Path) -> None:
    both = problems(
        tmp_path, "approval: {rules: [{match: {tool: x, category: web}, disposition: deny}]}\n"
    )
    assert "exactly one of: tool, action_type, category" in both
    approvals = problems(
        tmp_path,
        "approval: {rules: [{match: {tool: x}, disposition: deny, required_approvals: 2}]}\n",
    )
    assert "required_approvals applies only" in approvals


def test_autonomy_presets_keep_defaults_and_refuse_contradictions(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "autonomy: {presets: {full: {auto_approve: [code]}}}\n"))
    assert set(config.autonomy.presets) == {"full", "semi", "supervised", "locked"}
    message = problems(
        tmp_path, "autonomy: {presets: {semi: {auto_approve: [db], human_approval: [db]}}}\n"
    )
    assert "both auto_approve and human_approval" in message


def test_tools_section(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, "tools:\n  read_file: {timeout_seconds: 5, max_output_bytes: 1000}\n")
    )
    assert config.tool_settings("READ_FILE").timeout_seconds == 5
    assert config.tool_settings("other").enabled is True
    message = problems(tmp_path, "tools:\n  Read_File: {}\n  'read_file ': {}\n")
    assert "name the same tool" in message
    assert "timeout_seconds" in problems(tmp_path, "tools: {x: {timeout_seconds: -1}}\n")


def test_mcp_servers(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
            mcp_servers:
              - {name: files, transport: stdio, command: [mcp-files, --root, /w]}
              - {name: search, transport: http, url: "https://mcp.example.com/mcp"}
            """,
        )
    )
    assert [s.name for s in config.mcp_servers] == ["files", "search"]
    assert "needs command" in problems(
        tmp_path, "mcp_servers: [{name: a, transport: stdio, url: 'https://x.example'}]\n"
    )
    assert "needs url" in problems(tmp_path, "mcp_servers: [{name: a, transport: http}]\n")
    assert "scheme" in problems(
        tmp_path, "mcp_servers: [{name: a, transport: http, url: 'file:///x'}]\n"
    )
    assert "duplicate" in problems(
        tmp_path,
        "mcp_servers: [{name: a, transport: stdio, command: [x]},"
        " {name: A, transport: stdio, command: [y]}]\n",
    )


def test_parse_config_accepts_parsed_data() -> None:
    assert parse_config(None) == SynthOrgConfig()
    with pytest.raises(ConfigError, match=r"<config>: autonomy\.default"):
        parse_config({"autonomy": {"default": "x"}})


def test_config_is_frozen() -> None:
    config = SynthOrgConfig()
    with pytest.raises(ValueError):
        config.tools = {}
