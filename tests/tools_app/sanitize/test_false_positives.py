"""A path or a number is not a secret; the same names with secret values still are."""

from __future__ import annotations

import pytest

from tools_app.sanitize import redact_secrets
from tools_app.sanitize.keys import is_secret_name

NOT_SECRETS = [
    "PWD=/home/x",
    "PASSWORD_FILE=/run/secrets/db_password",
    "SSH_AUTH_SOCK=/tmp/ssh-XXXX/agent.123",
    "token: ~/tokens/github.txt",
    "l1_token_budget=4000",
    "max_tokens: 128",
    "PASSWORD_MIN_LENGTH=12",
    "password_attempts = 3",
    '"token_type": "bearer"',
    "secret_name=prod-db",
]
# Positive controls: the same names (or the plain secret names) holding secrets.
SECRETS = [
    ("PWD=hunter2-correct-horse", "hunter2-correct-horse"),
    ("PASSWORD=s3cr3t-Pa55word", "s3cr3t-Pa55word"),
    ("token: ghx9Wq2LmZ81vKp0", "ghx9Wq2LmZ81vKp0"),
    ("password=123456789012", "123456789012"),
    ("password=/aB3dE5fG7hJ9kL1mN3pQ5/x", "/aB3dE5fG7hJ9kL1mN3pQ5/x"),
    ('"secret": "7f2a9c4e1b8d"', "7f2a9c4e1b8d"),
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_paths_numbers_and_descriptions_of_secrets_are_kept(text: str) -> None:
    assert redact_secrets(text) == text


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secret_values_under_the_same_names_are_redacted(text: str, secret: str) -> None:
    clean = redact_secrets(text)
    assert secret not in clean
    assert "[REDACTED:" in clean


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("l1_token_budget", False),
        ("token_count", False),
        ("max_token", False),
        ("PASSWORD_FILE", False),
        ("token", True),
        ("GITHUB_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("db_password", True),
        ("apiKey", True),
    ],
)
def test_metadata_words_make_a_secret_name_describe_the_secret(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
