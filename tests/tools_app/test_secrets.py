"""The console's own secrets: settings secrets and secret-named environment variables."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings

from tools_app.secrets import known_secrets


@pytest.fixture
def fresh_secrets() -> Iterator[None]:
    known_secrets.cache_clear()
    yield
    known_secrets.cache_clear()


def test_secret_named_environment_values_are_known_secrets(
    monkeypatch: pytest.MonkeyPatch, fresh_secrets: None
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "dpl-7Qx2mV9rK4sT8wZ1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("SERVICE_SECRET_VALUE", "another-secret-value-1")
    # Positive control: the same kind of values under names that do not say secret,
    # and paths, short numbers or short values under names that do, are not secrets.
    monkeypatch.setenv("DEPLOY_REGION", "eu-central-1-zone-b")
    monkeypatch.setenv("PWD", "/home/x")
    monkeypatch.setenv("TOKEN_BUDGET", "4000")
    monkeypatch.setenv("SHORT_TOKEN", "abc")
    found = known_secrets()
    assert settings.SECRET_KEY in found
    assert "dpl-7Qx2mV9rK4sT8wZ1" in found
    assert "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" in found
    assert "another-secret-value-1" in found
    assert not {"eu-central-1-zone-b", "/home/x", "4000", "abc"} & set(found)


def test_the_minimum_length_setting_drops_shorter_secrets(
    monkeypatch: pytest.MonkeyPatch, fresh_secrets: None
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "twelve-chars")
    assert "twelve-chars" in known_secrets()
    known_secrets.cache_clear()
    monkeypatch.setattr(settings, "SYNTHORG_SECRET_MIN_LENGTH", 13)
    assert "twelve-chars" not in known_secrets()
