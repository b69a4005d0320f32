"""``people.local_accounts: false``: passwords only for the break-glass accounts, on both
doors (``/accounts/login/`` and ``/admin/login/``); sessions opened with a password before
the switch end; personal API tokens keep working. And the section's checks at load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.test import Client

from common.config import ConfigError
from common.config.loader import parse_config
from common.settings_config import config_reload
from trust_app.services.agents import person_create, person_token_issue

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct horse battery staple"


def _use(tmp_path: Path, people: dict[str, object]) -> None:
    path = tmp_path / "synthorg.yaml"
    path.write_text(yaml.safe_dump({"people": people}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()


def _password_sign_in(door: str, username: str) -> Client:
    browser = Client(REMOTE_ADDR="192.0.2.10")
    browser.post(door, {"username": username, "password": PASSWORD, "next": "/"})
    return browser


def test_with_local_accounts_off_only_break_glass_accounts_use_a_password(
    tmp_path: Path,
) -> None:
    person_create(username="ops-local", role="operator", password=PASSWORD)
    person_create(username="root-admin", role="admin", password=PASSWORD, superuser=True)
    before = _password_sign_in("/accounts/login/", "ops-local")
    assert before.get("/approvals/").status_code == 200  # control: on by default

    _use(tmp_path, {"local_accounts": False, "break_glass": ["root-admin"]})
    page = Client().get("/accounts/login/").content.decode()
    assert "Password sign-in is kept for break-glass accounts only" in page
    # The right password of an ordinary account no longer signs in, on either door.
    for door in ("/accounts/login/", "/admin/login/"):
        refused = _password_sign_in(door, "ops-local")
        assert refused.get("/approvals/").status_code == 302, door
    # The session it opened before the switch is over.
    assert before.get("/approvals/").status_code == 302
    # Control: the break-glass admin signs in with a password, on both doors.
    assert _password_sign_in("/accounts/login/", "root-admin").get("/agents/").status_code == 200
    admin_site = _password_sign_in("/admin/login/?next=/admin/", "root-admin")
    assert admin_site.get("/admin/").status_code == 200


def test_personal_api_tokens_keep_working_with_local_accounts_off(tmp_path: Path) -> None:
    person = person_create(username="ops-script", role="operator", password=PASSWORD)
    token = person_token_issue(person=person)
    _use(tmp_path, {"local_accounts": False, "break_glass": ["someone-else"]})
    answer = Client().get(
        "/api/v1/approvals/", {"status": "pending"}, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert answer.status_code == 200, answer.content[:300]


@pytest.mark.parametrize(
    ("people", "field", "words"),
    [
        ({"local_accounts": False}, "people", "leaves nobody able to sign in"),
        (
            {"oidc": {"issuer": "http://127.0.0.1:9", "client_id": "c",
                      "client_secret_env": "S", "roles": {"ops": "root"}}},
            "people.oidc.roles", "roles are operator, admin, auditor",
        ),
        (
            {"oidc": {"issuer": "http://127.0.0.1:9", "client_id": "c",
                      "client_secret_env": "S", "roles": {}}},
            "people.oidc.roles", "map at least one",
        ),
        (
            {"oidc": {"issuer": "ftp://idp.example.test", "client_id": "c",
                      "client_secret_env": "S", "roles": {"ops": "operator"}}},
            "people.oidc.issuer", "issuer",
        ),
        (
            {"oidc": {"issuer": "https://idp.example.test", "client_id": "c",
                      "client_secret": "inline", "client_secret_env": "S",
                      "roles": {"ops": "operator"}}},
            "people.oidc.client_secret", "",
        ),
        (
            {"oidc": {"issuer": "https://idp.example.test", "client_id": "c",
                      "client_secret_env": "S", "scopes": ["profile"],
                      "roles": {"ops": "operator"}}},
            "people.oidc.scopes", "must include 'openid'",
        ),
    ],
)  # fmt: skip
def test_the_section_is_checked_at_load(people: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"people": people})
    text = str(raised.value)
    assert field in text and words in text, text


def test_control_a_complete_section_loads() -> None:
    config = parse_config(
        {
            "people": {
                "local_accounts": False,
                "break_glass": ["root-admin"],
                "oidc": {
                    "issuer": "https://idp.example.test/",
                    "client_id": "console",
                    "client_secret_env": "SYNTHORG_OIDC_CLIENT_SECRET",
                    "roles": {"ops": "operator", "sec": "auditor"},
                },
            }
        }
    )
    assert config.people.oidc is not None
    assert config.people.oidc.issuer == "https://idp.example.test"
    assert config.people.password_allowed("root-admin")
    assert not config.people.password_allowed("ops")
