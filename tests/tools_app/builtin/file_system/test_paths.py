"""The pure path checks: every encoding and trick refused before a process is spent."""

from __future__ import annotations

import pytest

from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.builtin.file_system.paths import (
    ALWAYS_DENIED,
    AgentPath,
    PathRules,
    check_agent_path,
)

WS = "/srv/ws/agent-1"
RULES = PathRules(workspace_roots=(WS, "/real/ws/agent-1"))
FULL = PathRules(workspace_roots=(WS,), allow_absolute=True)


def refused(raw: object, rules: PathRules = RULES) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        check_agent_path(raw, rules)
    return caught.value


@pytest.mark.parametrize(
    ("raw", "parts"),
    [
        ("notes.txt", ("notes.txt",)),
        ("src/app/main.py", ("src", "app", "main.py")),
        ("./src//app/./x", ("src", "app", "x")),
        ("src/../docs/readme.md", ("docs", "readme.md")),
        (".", ()),
        ("a/b/../..", ()),
        (f"{WS}/src/x.py", ("src", "x.py")),
        ("/real/ws/agent-1/x", ("x",)),
        ("100% done.txt", ("100% done.txt",)),
        ("file%20name", ("file%20name",)),
        ("café.md", ("café.md",)),
        ("cafe\u0301.md", ("café.md",)),  # NFD input is checked and used as NFC
        ("données/résumé.txt", ("données", "résumé.txt")),
        (".env.example", (".env.example",)),
        ("public.pem.txt", ("public.pem.txt",)),
    ],
)
def test_paths_inside_the_workspace_are_accepted(raw: str, parts: tuple[str, ...]) -> None:
    path = check_agent_path(raw, RULES)
    assert path == AgentPath("workspace", parts)


@pytest.mark.parametrize(
    "raw",
    [
        "../outside",
        "../../etc/passwd",
        "src/../../outside",
        "a/b/../../../x",
        "..",
        "/etc/passwd",
        "/srv/ws/agent-10/x",  # a sibling that shares the prefix
        f"{WS}/../agent-2/x",
        "//etc/passwd",
        "~/notes",
        "~root/.profile",
    ],
)
def test_traversal_and_absolute_paths_are_refused(raw: str) -> None:
    error = refused(raw)
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert "workspace" in error.reason or "home" in error.reason


@pytest.mark.parametrize(
    "raw",
    [
        "%2e%2e/etc/passwd",
        "%2E%2E%2Fetc%2Fpasswd",
        "..%2fetc",
        "..%5cetc",
        "%252e%252e/secret",  # double-encoded dot
        "%25252e%25252e/secret",  # triple
        "a%00b",
        "..\\..\\windows",
        "src\\..\\..\\x",
    ],
)
def test_encoded_separators_and_dots_are_refused(raw: str) -> None:
    assert refused(raw).code is RefusalCode.PATH_NOT_REACHABLE


@pytest.mark.parametrize(
    "raw",
    [
        "\uff0e\uff0e/etc/passwd",  # fullwidth full stops
        "..\uff0fetc",  # fullwidth solidus
        "\u2024\u2024/etc",  # one-dot leader
        "\u2025/etc",  # two-dot leader
        "..\u2215etc",  # division slash
        "..\u2044etc",  # fraction slash
        "\ufe52\ufe52/x",  # small full stop
        "..\ufe68x",  # small reverse solidus
        "a\u200bb",  # zero-width space
        "a\u202eb",  # right-to-left override
        "\ue000x",  # private use
    ],
)
def test_unicode_lookalikes_and_invisible_characters_are_refused(raw: str) -> None:
    error = refused(raw)
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert "U+" in error.reason


@pytest.mark.parametrize("raw", ["a\x00b", "\x00", "a\nb", "a\x1bb", "a\x7fb", "", 42, None])
def test_malformed_input_is_an_invalid_argument(raw: object) -> None:
    assert refused(raw).code is RefusalCode.INVALID_ARGUMENT


def test_overlong_paths_and_names_are_refused() -> None:
    short = PathRules(workspace_roots=(WS,), max_path_bytes=64)
    assert refused("a/" * 40, short).code is RefusalCode.INVALID_ARGUMENT
    assert check_agent_path("a/" * 30, short).parts == ("a",) * 30
    assert refused("x" * 256).code is RefusalCode.INVALID_ARGUMENT
    assert refused("x" * 5000).code is RefusalCode.INVALID_ARGUMENT
    # Multi-byte characters count in bytes.
    assert refused("é" * 40, short).code is RefusalCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    "raw",
    [
        ".ssh/id_rsa",
        "home/.ssh",
        ".SSH/config",
        "project/.aws/credentials",
        ".config/gcloud/application_default_credentials.json",
        ".kube/config",
        ".docker/config.json",
        ".netrc",
        ".git-credentials",
        ".pgpass",
        ".bash_history",
        "x/.zsh_history",
        "keys/id_ed25519.pub",
        "certs/server.pem",
        "certs/server.KEY",
        "src/../.ssh/authorized_keys",
    ],
)
def test_the_always_deny_floor_holds_inside_the_workspace(raw: str) -> None:
    error = refused(raw)
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert "always-denied" in error.reason


@pytest.mark.parametrize(
    "raw",
    [
        "/etc/shadow",
        "/etc/gshadow",
        "/etc/sudoers",
        "/etc/sudoers.d/90-admins",
        "/root/.ssh/id_rsa",
        "/home/alice/.aws/credentials",
        "/home/alice/.bash_history",
        "/proc/self/environ",
        "/var/run/docker.sock",
        "/etc/../etc/shadow",
    ],
)
def test_the_always_deny_floor_holds_for_scope_full(raw: str) -> None:
    assert refused(raw, FULL).code is RefusalCode.PATH_NOT_REACHABLE


def test_scope_full_reaches_absolute_paths_outside_the_workspace() -> None:
    assert check_agent_path("/etc/hostname", FULL) == AgentPath("root", ("etc", "hostname"))
    assert check_agent_path(f"{WS}/x", FULL) == AgentPath("workspace", ("x",))
    # '..' above the root is refused rather than silently clamped.
    assert refused("/../../etc/hostname", FULL).code is RefusalCode.PATH_NOT_REACHABLE
    # Relative paths stay in the workspace even with scope full.
    assert check_agent_path("etc/shadow", FULL) == AgentPath("workspace", ("etc", "shadow"))


def test_settings_add_to_the_floor_but_cannot_remove_from_it() -> None:
    rules = PathRules(workspace_roots=(WS,), extra_denied=("secrets", "*.sqlite"))
    assert refused("app/secrets/db.txt", rules).code is RefusalCode.PATH_NOT_REACHABLE
    assert refused("data/app.sqlite", rules).code is RefusalCode.PATH_NOT_REACHABLE
    assert refused(".ssh/x", rules).code is RefusalCode.PATH_NOT_REACHABLE
    assert set(ALWAYS_DENIED) <= set(rules.floor)


def test_display_names_the_path_as_the_agent_would() -> None:
    assert AgentPath("workspace", ()).display() == "."
    assert AgentPath("workspace", ("a", "b")).display() == "a/b"
    assert AgentPath("root", ("etc", "x")).display() == "/etc/x"
    assert AgentPath("workspace", ()).is_anchor
