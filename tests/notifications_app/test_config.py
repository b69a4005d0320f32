"""The notifications section: field-level errors a person can fix, and sensible defaults."""

from __future__ import annotations

import pytest

from common.config import ConfigError, parse_config
from common.config.notifications import ALL_EVENTS, ALL_TIERS, WebhookChannel


def problems(section: object) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config({"notifications": section}, source="test.yaml")
    return str(caught.value)


def test_an_empty_section_and_a_full_one_are_valid() -> None:
    assert parse_config({}, source="x").notifications.channels == ()
    config = parse_config(
        {
            "notifications": {
                "console_url": "https://console.example",
                "expiring_within_seconds": 60,
                "channels": [
                    {"name": "hook", "type": "webhook", "url": "https://h.example/x",
                     "secret_env": "HOOK_KEY", "events": ["new"], "risk_tiers": ["high"]},
                    {"name": "chat", "type": "slack", "url_env": "SLACK_URL"},
                    {"name": "mail", "type": "email", "to": ["ops@example.com"]},
                ],
            }
        },
        source="x",
    )  # fmt: skip
    hook, chat, mail = config.notifications.channels
    assert isinstance(hook, WebhookChannel)
    assert hook.wants("new", "high") and not hook.wants("decided", "high")
    assert not hook.wants("new", "low")
    assert chat.events == ALL_EVENTS and chat.risk_tiers == ALL_TIERS
    assert mail.wants("decided", "critical")


@pytest.mark.parametrize(
    ("section", "needles"),
    [
        ({"channels": [{"name": "a", "type": "pager", "url": "https://x.example"}]},
         ["channels[0].type", "webhook", "slack", "email"]),
        ({"channels": [{"name": "a", "type": "email", "to": ["not-an-address"]}]},
         ["not an email address: not-an-address"]),
        ({"channels": [{"name": "a", "type": "slack", "url": "https://x.example",
                        "url_env": "X"}]}, ["exactly one of url or url_env"]),
        ({"channels": [{"name": "a", "type": "slack"}]}, ["exactly one of url or url_env"]),
        ({"channels": [{"name": "a", "type": "webhook", "url": "https://x.example"}]},
         ["secret_env"]),
        ({"channels": [{"name": "a", "type": "webhook", "url": "ftp://x.example",
                        "secret_env": "K"}]}, ["url"]),
        ({"channels": [{"name": "a", "type": "slack", "url_env": "not a name"}]},
         ["environment variable name"]),
        ({"channels": [{"name": "a", "type": "slack", "url_env": "A", "events": ["sent"]}]},
         ["events", "new", "escalated", "expiring", "decided"]),
        ({"channels": [{"name": "a", "type": "slack", "url_env": "A", "events": []}]},
         ["at least one"]),
        ({"channels": [{"name": "a", "type": "slack", "url_env": "A"},
                       {"name": "A", "type": "slack", "url_env": "B"}]}, ["used twice"]),
        ({"expiring_within_seconds": 1}, ["expiring_within_seconds", "5"]),
        ({"channel": []}, ["unknown field", "allowed fields", "channels"]),
    ],
)  # fmt: skip
def test_mistakes_are_named_with_what_is_allowed(section: object, needles: list[str]) -> None:
    text = problems(section)
    assert "notifications" in text, text
    for needle in needles:
        assert needle in text, (needle, text)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"interactive": True}, "interactive: true needs signing_secret_env"),
        ({"interactive": True, "signing_secret_env": "SLACK KEY"}, "environment variable name"),
        ({"users": {"alice": "alice"}}, "is not a Slack user id"),
        ({"users": {"U0ALICE": " "}}, "must name a person"),
        ({"response_hosts": ["https://hooks.slack.com"]}, "is not a host name"),
    ],
)
def test_an_interactive_slack_channel_is_checked(extra: dict[str, object], words: str) -> None:
    channel = {"name": "chat", "type": "slack", "url_env": "SLACK_URL", **extra}
    assert words in problems({"channels": [channel]})


def test_control_an_interactive_slack_channel_loads() -> None:
    config = parse_config(
        {"notifications": {"channels": [
            {"name": "chat", "type": "slack", "url_env": "SLACK_URL", "interactive": True,
             "signing_secret_env": "SLACK_SIGNING", "users": {"U024BE7LH": "alice"}},
        ]}},
        source="x",
    )  # fmt: skip
    (chat,) = config.notifications.channels
    assert chat.type == "slack" and chat.interactive
    assert chat.response_hosts == ("hooks.slack.com",)


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ({"channels": [{"name": "p", "type": "push", "endpoint_hosts": ["https://fcm.example"]}]},
         "is not a host name"),
        ({"channels": [{"name": "p", "type": "push", "contact": "ops@example.org"}]},
         "mailto:<address> or an https:// URL"),
        ({"digest_window_seconds": -1}, "digest_window_seconds"),
        ({"digest_window_seconds": 7200}, "digest_window_seconds"),
    ],
)  # fmt: skip
def test_push_channels_and_the_digest_window_are_checked(section: object, words: str) -> None:
    assert words in problems(section)


def test_control_a_push_channel_and_a_digest_window_load() -> None:
    config = parse_config(
        {"notifications": {"digest_window_seconds": 30, "channels": [
            {"name": "phones", "type": "push", "contact": "mailto:ops@example.org",
             "endpoint_hosts": ["*.notify.windows.com", "127.0.0.1:8443"]},
            {"name": "hook", "type": "webhook", "url": "https://x.example", "secret_env": "K",
             "digest": False},
        ]}},
        source="x",
    )  # fmt: skip
    phones, hook = config.notifications.channels
    assert phones.type == "push" and phones.digest and not hook.digest
    assert config.notifications.digest_window_seconds == 30
    assert parse_config({}, source="x").notifications.digest_window_seconds == 60
