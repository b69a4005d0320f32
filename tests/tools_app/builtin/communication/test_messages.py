"""The ``communication`` section as the config loader reads it, the tools it offers,
and the message checks both tools make (pure: no database, no server)."""

from __future__ import annotations

from typing import Any

import pytest

from common.config import ConfigError
from common.config.loader import parse_config
from common.vocabulary.levels import SubConstraintOverrides
from tools_app.builtin.communication.email import send_email
from tools_app.builtin.communication.messages import (
    MessageRefusedError,
    email_call,
    slack_call,
)
from tools_app.builtin.communication.slack import slack_post
from tools_app.registry import build_catalog

SLACK_CONNECTION = {
    "name": "slack",
    "base_url": "https://slack.com/api",
    "auth": {"secret": "SLACK_BOT_TOKEN"},
    "operations": [{"method": "POST", "path": "/chat.postMessage"}],
}
EMAIL = {"sender": "agents@example.com", "internal_domains": ["example.com"]}


def _problems(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    return {p.path: p.message for p in caught.value.problems}


def test_config_errors_name_the_field() -> None:
    problems = _problems({"communication": {"email": {**EMAIL, "from": "x@example.com"}}})
    assert "communication.email.from" in problems, problems
    assert "allowed fields: sender" in problems["communication.email.from"]

    problems = _problems({"communication": {"email": {**EMAIL, "sender": "Ana <a@example.com>"}}})
    assert "is not a bare email address" in problems["communication.email.sender"], problems

    problems = _problems({"communication": {"email": {**EMAIL, "max_recipients": 0}}})
    assert "communication.email.max_recipients" in problems, problems

    problems = _problems({"communication": {"slack": {"connection": "nope", "channels": ["x"]}}})
    assert any("names no configured connection" in m for m in problems.values()), problems

    problems = _problems({"communication": {}})
    assert any("needs email, slack or both" in m for m in problems.values()), problems

    # Control: a whole section loads.
    config = parse_config(
        {
            "connections": [SLACK_CONNECTION],
            "communication": {
                "email": EMAIL,
                "slack": {"connection": "slack", "channels": ["#ops"]},
            },
        }
    )
    assert config.communication is not None and config.communication.slack is not None
    assert config.communication.slack.channels == ("ops",)


def test_the_tools_are_offered_only_with_their_part_of_the_section() -> None:
    bare = parse_config({})
    assert not send_email.offered(bare) and not slack_post.offered(bare)
    email_only = parse_config({"communication": {"email": EMAIL}})
    assert send_email.offered(email_only) and not slack_post.offered(email_only)
    both = parse_config(
        {
            "connections": [SLACK_CONNECTION],
            "communication": {
                "email": EMAIL,
                "slack": {"connection": "slack", "channels": ["ops"]},
            },
        }
    )
    assert send_email.offered(both) and slack_post.offered(both)
    # The registry follows: absent without the section, both contracts with it.
    assert build_catalog(bare).contract("send_email") is None
    catalog = build_catalog(both)
    assert catalog.contract("send_email") is not None
    assert catalog.contract("slack_post") is not None


def test_agent_grants_are_checked_when_written() -> None:
    with pytest.raises(ValueError, match="is not a bare email address"):
        SubConstraintOverrides.model_validate({"email_recipients": ["a@b@example.com"]})
    with pytest.raises(ValueError, match="is not a Slack channel"):
        SubConstraintOverrides.model_validate({"slack_channels": ["#Bad Channel"]})
    # Control: addresses, domains and channels as written are kept, normalised.
    grants = SubConstraintOverrides.model_validate(
        {"email_recipients": ["Ana@Example.COM", "Example.org"], "slack_channels": ["#ops"]}
    )
    assert grants.email_recipients == ("Ana@example.com", "example.org")
    assert grants.slack_channels == ("ops",)


def _email_section() -> Any:
    config = parse_config(
        {"communication": {"email": {**EMAIL, "allowed_domains": ["example.org"]}}}
    )
    assert config.communication is not None
    return config.communication.email


def test_internal_and_external_messages() -> None:
    section = _email_section()
    grants = {"email_recipients": ["example.com", "example.org"]}
    internal = email_call(section, grants, {"to": "ana@example.com", "subject": "s", "body": "b"})
    assert internal.action_type == "comms:internal" and internal.external == ()
    external = email_call(
        section, grants, {"to": ["ana@example.com", "c@example.org"], "subject": "s", "body": "b"}
    )
    assert external.action_type == "comms:external"
    assert external.external == ("c@example.org",)


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"to": "ana@example.com", "subject": "a\r\nBcc: e@example.net"}, "line break"),
        ({"to": "ana@example.com", "subject": "a\x00b"}, "control character"),
        ({"to": "ana@example.com\nBcc: e@example.net", "subject": "a"}, "bare email address"),
        ({"to": "ana@example.com,e@example.net", "subject": "a"}, "bare email address"),
        ({"to": '"e@example.net" <ana@example.com>', "subject": "a"}, "bare email address"),
        ({"to": [], "subject": "a"}, "non-empty list"),
        ({"to": "ana@example.com", "subject": "a", "body": "x" * 20000}, "at most 16384"),
    ],
)
def test_messages_that_could_smuggle_a_header_or_exceed_a_limit_are_refused(
    arguments: dict[str, Any], words: str
) -> None:
    section = _email_section()
    with pytest.raises(MessageRefusedError, match=words):
        email_call(section, {"email_recipients": ["example.com"]}, {"body": "b", **arguments})


def test_slack_channels_need_both_lists() -> None:
    config = parse_config(
        {
            "connections": [SLACK_CONNECTION],
            "communication": {"slack": {"connection": "slack", "channels": ["ops", "deploys"]}},
        }
    )
    assert config.communication is not None
    section = config.communication.slack
    with pytest.raises(MessageRefusedError, match="allowed: ops"):
        slack_call(
            section, {"slack_channels": ["ops", "random"]}, {"channel": "#random", "text": "x"}
        )
    with pytest.raises(MessageRefusedError, match="allowed: ops"):
        slack_call(section, {"slack_channels": ["ops"]}, {"channel": "deploys", "text": "x"})
    # Control: a channel in both.
    assert (
        slack_call(section, {"slack_channels": ["ops"]}, {"channel": "#ops", "text": "x"}).channel
        == "ops"
    )
