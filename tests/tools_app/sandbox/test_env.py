"""The sandbox environment: built from empty, denylist wins."""

from __future__ import annotations

import pytest

from tools_app.sandbox.env import build_sandbox_env, denied_names_in, is_denied

WORKER = {
    "HOME": "/root",
    "PATH": "/usr/bin",
    "LANG": "en_US.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm",
    "TZ": "UTC",
    "AWS_SECRET_ACCESS_KEY": "x",
    "DJANGO_SECRET_KEY": "x",
    "GITHUB_TOKEN": "x",
    "PGPASSWORD": "x",
    "SOME_CREDENTIALS_FILE": "x",
    "SSH_AUTH_SOCK": "/tmp/agent",
    "LD_PRELOAD": "/evil.so",
    "PYTHONPATH": "/evil",
    "DATABASE_URL": "postgres://u:p@h/db",
    "REDIS_URL": "redis://h",
    "RANDOM_SETTING": "1",
}


def test_only_allowlisted_names_pass_from_the_worker():
    env = build_sandbox_env(WORKER, {}, path="/usr/bin", home="/h", tmpdir="/t")
    assert env == {
        "HOME": "/h",
        "PATH": "/usr/bin",
        "LANG": "en_US.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm",
        "TZ": "UTC",
        "TMPDIR": "/t",
    }


@pytest.mark.parametrize(
    "name",
    [
        "API_KEY",
        "my_secret",
        "X_TOKEN_Y",
        "DB_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "PRIVATE_THING",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "NODE_PATH",
        "NODE_OPTIONS",
        "PERL5LIB",
        "PERL5OPT",
        "RUBYLIB",
        "RUBYOPT",
        "BASH_ENV",
        "ENV",
        "GIT_SSH_COMMAND",
        "GIT_CONFIG_GLOBAL",
        "DOCKER_HOST",
    ],
)
def test_denylist_wins_even_over_a_tools_own_additions(name):
    assert is_denied(name)
    env = build_sandbox_env({}, {name: "value"}, path="/usr/bin", home="/h", tmpdir="/t")
    assert name not in env


def test_additions_cannot_move_path_home_or_tmpdir():
    env = build_sandbox_env(
        {}, {"PATH": ".", "HOME": "/root", "TMPDIR": "/"}, path="/usr/bin", home="/h", tmpdir="/t"
    )
    assert (env["PATH"], env["HOME"], env["TMPDIR"]) == ("/usr/bin", "/h", "/t")


def test_malformed_names_and_nul_values_are_dropped():
    env = build_sandbox_env(
        {}, {"A=B": "1", "": "2", "OK": "fine", "NUL": "a\x00b"}, path="/p", home="/h", tmpdir="/t"
    )
    assert env["OK"] == "fine" and "A=B" not in env and "" not in env and "NUL" not in env


def test_denied_names_are_listed_for_audit():
    assert denied_names_in(["PATH", "GITHUB_TOKEN", "LD_PRELOAD"]) == ["GITHUB_TOKEN", "LD_PRELOAD"]


@pytest.mark.parametrize(
    "name", ["LD_PRELOAD", "PYTHONPATH", "BASH_ENV", "GIT_SSH_COMMAND", "HTTPS_PROXY", "PATH"]
)
def test_a_granted_secret_never_takes_an_injection_or_sandbox_name(name):
    env = build_sandbox_env(
        {}, {}, path="/usr/bin", home="/h", tmpdir="/t", granted={name: "/evil.so"}
    )
    assert env.get(name) != "/evil.so"


def test_a_granted_secret_takes_a_secret_shaped_name_that_additions_cannot():
    # Attack: a tool's ordinary additions cannot carry a secret-shaped name ...
    plain = build_sandbox_env({}, {"DEPLOY_TOKEN": "v"}, path="/p", home="/h", tmpdir="/t")
    assert "DEPLOY_TOKEN" not in plain
    # ... positive control: a secret granted for the call can.
    granted = build_sandbox_env(
        {}, {}, path="/p", home="/h", tmpdir="/t", granted={"DEPLOY_TOKEN": "v"}
    )
    assert granted["DEPLOY_TOKEN"] == "v"
