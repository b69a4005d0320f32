"""PURE parts of the container tools: the allowlist, the inspect answer, bounded logs."""

from __future__ import annotations

import pytest

from common.config.deployment import ContainersSection
from tools_app.builtin.deployment.inspection import (
    allowed_container,
    bounded_log,
    container_state,
    restart_action_type,
)
from tools_app.builtin.deployment.pipelines import DeployRefusedError
from tools_app.contracts import CallActionTypeError

SECTION = ContainersSection.model_validate(
    {"docker_host": "tcp://127.0.0.1:2999", "allowed": [
        {"name": "web", "environment": "staging"},
        {"name": "db", "environment": "production", "safety_class": "privileged"},
    ]}
)  # fmt: skip


def test_only_allowlisted_names_and_their_people() -> None:
    for name in ("web-2", "WEB", "", None, "db/../web"):
        with pytest.raises(DeployRefusedError, match="allowed: web, db"):
            allowed_container(SECTION, name)
    assert allowed_container(SECTION, "web").required_people == 0
    assert allowed_container(SECTION, "db").required_people == 2


def test_a_restart_is_placed_by_its_containers_environment() -> None:
    assert restart_action_type(SECTION, {"name": "web"}) == "deploy:staging"
    assert restart_action_type(SECTION, {"name": "db"}) == "deploy:production"
    with pytest.raises(CallActionTypeError, match="allowed: web, db"):
        restart_action_type(SECTION, {"name": "cache"})


def test_the_inspect_answer_reads_as_a_state() -> None:
    attrs = {
        "Name": "/web", "RestartCount": 3, "Config": {"Image": "web:1"},
        "State": {"Status": "exited", "Running": False, "ExitCode": 137,
                  "StartedAt": "2026-01-01T00:00:00Z", "FinishedAt": "0001-01-01T00:00:00Z"},
    }  # fmt: skip
    state = container_state(allowed_container(SECTION, "web"), attrs)
    assert state["status"] == "exited" and state["exit_code"] == 137 and not state["running"]
    assert state["finished_at"] is None and state["health"] is None and state["restart_count"] == 3


def test_logs_keep_the_last_bytes_without_terminal_controls() -> None:
    chunks = [f"line {n}\n".encode() for n in range(2000)]
    text, cut = bounded_log(iter(chunks), 1024)
    assert cut and text.endswith("line 1999\n") and text.startswith("line ")
    assert len(text.encode()) <= 1024
    coloured, cut = bounded_log(iter([b"\x1b[31mred\x1b[0m \x1b]0;title\x07ok\x00\n"]), 1024)
    assert coloured == "red ok\n" and not cut
