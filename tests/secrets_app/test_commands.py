"""manage.py synthorg_secret: values from stdin, never printed; list, revoke, rotate."""

from __future__ import annotations

import io
import secrets
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from audit_app.models import AuditEvent
from secrets_app.broker import secrets_for_call
from secrets_app.keys import key_file
from secrets_app.models import Secret, SecretGrant, SecretVersion
from trust_app.models import Agent

pytestmark = pytest.mark.django_db


def _run(monkeypatch: pytest.MonkeyPatch, *args: str, stdin: str = "") -> tuple[str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out, err = io.StringIO(), io.StringIO()
    call_command("synthorg_secret", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _agent(name: str) -> Agent:
    return Agent.objects.create(name=name, access_level="standard", workspace=f"/tmp/{name}")


def _everything_written() -> str:
    rows = AuditEvent.objects.values_list("reason", "data")
    versions = SecretVersion.objects.values_list("ciphertext", flat=True)
    return repr(list(rows)) + repr(list(versions))


def test_set_stores_the_value_encrypted_and_never_prints_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    value = "tok-" + secrets.token_urlsafe(24)
    out, err = _run(monkeypatch, "set", "DEPLOY_TOKEN", stdin=value + "\n")
    assert "stored DEPLOY_TOKEN version 1" in out
    listed, _ = _run(monkeypatch, "list")
    assert "DEPLOY_TOKEN" in listed and "version 1" in listed
    for text in (out, err, listed, _everything_written()):
        assert value not in text
    # The stored value is the one given, read back through the key ring.
    agent = _agent("cmd-reader")
    _run(monkeypatch, "grant", "DEPLOY_TOKEN", "--agent", agent.name, "--tool", "http_request")
    assert secrets_for_call(agent=agent, tool="http_request", names=["DEPLOY_TOKEN"]) == {
        "DEPLOY_TOKEN": value
    }
    assert AuditEvent.objects.filter(kind="secret.set", data__secret="DEPLOY_TOKEN").exists()


def test_a_refused_value_is_not_echoed_in_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CommandError) as refused:
        _run(monkeypatch, "set", "SHORTY", stdin="abc\n")
    assert "at least" in str(refused.value) and "abc" not in str(refused.value)
    with pytest.raises(CommandError, match="name"):
        _run(monkeypatch, "set", "bad name", stdin="long-enough-value\n")
    assert not Secret.objects.exists()


def test_rotation_keeps_references_working(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "rotating-" + secrets.token_urlsafe(16)
    _run(monkeypatch, "set", "ROTATED", stdin=value)
    agent = _agent("cmd-rotator")
    _run(monkeypatch, "grant", "ROTATED", "--agent", agent.name, "--tool", "http_request")
    old_key = key_file().read_text().split()[0]
    before = SecretVersion.objects.get(secret__name="ROTATED").ciphertext
    out, _ = _run(monkeypatch, "rotate-keys", "--new-key")
    assert "re-encrypted" in out
    keys = key_file().read_text().split()
    assert keys and old_key not in keys
    after = SecretVersion.objects.get(secret__name="ROTATED")
    assert after.ciphertext != before
    assert secrets_for_call(agent=agent, tool="http_request", names=["ROTATED"]) == {
        "ROTATED": value
    }
    # A new value is a new version; the reference follows it.
    _run(monkeypatch, "set", "ROTATED", stdin=value + "-2")
    assert secrets_for_call(agent=agent, tool="http_request", names=["ROTATED"]) == {
        "ROTATED": value + "-2"
    }
    assert Path(key_file()).stat().st_mode & 0o077 == 0


def test_revoke_erases_values_and_grants(monkeypatch: pytest.MonkeyPatch) -> None:
    _run(monkeypatch, "set", "GONE", stdin="a-value-to-revoke")
    agent = _agent("cmd-revoked")
    _run(monkeypatch, "grant", "GONE", "--agent", agent.name, "--tool", "http_request")
    out, _ = _run(monkeypatch, "revoke", "GONE")
    assert "revoked GONE" in out
    assert not SecretGrant.objects.filter(secret__name="GONE").exists()
    assert set(
        SecretVersion.objects.filter(secret__name="GONE").values_list("ciphertext", flat=True)
    ) == {""}
    listed, _ = _run(monkeypatch, "list")
    assert "GONE" in listed and "revoked" in listed
    with pytest.raises(CommandError, match="no active secret"):
        _run(monkeypatch, "revoke", "GONE")


def test_a_grant_for_a_tool_that_takes_no_secrets_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _run(monkeypatch, "set", "SOME", stdin="a-value-for-grants")
    agent = _agent("cmd-granted")
    with pytest.raises(CommandError, match="takes no secrets"):
        _run(monkeypatch, "grant", "SOME", "--agent", agent.name, "--tool", "read_file")
    # Positive control: the tool that takes secrets is granted.
    out, _ = _run(monkeypatch, "grant", "SOME", "--agent", agent.name, "--tool", "http_request")
    assert "granted SOME" in out
