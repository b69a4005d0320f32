"""Sub-constraints, each attacked with arguments that try to slip past it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.trust_app.policy.factories import WORKSPACE, agent, tool
from trust_app.policy import Outcome, Rule, decide

READ = tool("read_file", roles={"path": "path"})


# --- file-system scope ---------------------------------------------------------

ESCAPING_PATHS = [
    "../secrets",
    "a/../../secrets",
    "./../../../../etc/passwd",
    "%2e%2e/secrets",
    "%2E%2E%2Fsecrets",
    "..%2fsecrets",
    "%252e%252e%252fsecrets",  # double-encoded
    "..\\secrets",
    "..%5csecrets",
    "/etc/passwd",
    "//etc/passwd",
    "/srv/agents/alpha/workspace/../other",
    "/srv/agents/alpha/workspace-evil/x",  # prefix of the workspace, not inside it
]


@pytest.mark.parametrize("path", ESCAPING_PATHS)
@pytest.mark.parametrize("level", ["sandboxed", "restricted", "standard"])
def test_paths_outside_the_scope_are_denied(level: str, path: str) -> None:
    decision = decide(agent(level), READ, {"path": path})
    assert decision.outcome is Outcome.DENY, path
    assert decision.rule == Rule.FILE_SYSTEM_SCOPE
    assert "'path'" in decision.reason


@pytest.mark.parametrize(
    "path", ["src/main.py", "./notes.txt", "a/b/../c", f"{WORKSPACE}/src/x.py", "", "%41.txt"]
)
def test_paths_inside_the_workspace_are_allowed(path: str) -> None:
    assert decide(agent("sandboxed"), READ, {"path": path}).outcome is Outcome.ALLOW


@pytest.mark.parametrize(
    "path", ["a\x00b", "%00", "x%2500y", "a\nb", "~/x", "%7e/x", 42, None, ["ok", "a\x00"]]
)
def test_malformed_paths_are_denied(path: object) -> None:
    decision = decide(agent("elevated"), READ, {"path": path})
    assert decision.outcome is Outcome.DENY, path
    assert decision.rule == Rule.FILE_SYSTEM_SCOPE


def test_full_scope_allows_absolute_paths() -> None:
    assert decide(agent("elevated"), READ, {"path": "/etc/hosts"}).outcome is Outcome.ALLOW


def test_project_directory_scope_uses_the_project_root() -> None:
    policy = agent("standard", project_root="/srv/agents/alpha")
    assert decide(policy, READ, {"path": "../shared/x"}).outcome is Outcome.ALLOW
    assert decide(policy, READ, {"path": "../../bob/x"}).outcome is Outcome.DENY
    sandboxed = agent("sandboxed", project_root="/srv/agents/alpha")
    assert decide(sandboxed, READ, {"path": "../shared/x"}).outcome is Outcome.DENY


def test_list_of_paths_checks_every_item() -> None:
    policy = agent("standard")
    assert decide(policy, READ, {"path": ["a", "b/c"]}).outcome is Outcome.ALLOW
    assert decide(policy, READ, {"path": ["a", "../../x"]}).outcome is Outcome.DENY


def test_no_workspace_means_no_scoped_file_access() -> None:
    decision = decide(agent("standard", workspace=None), READ)
    assert decision.rule == Rule.FILE_SYSTEM_SCOPE
    assert "workspace" in decision.reason


def test_file_system_none_override_denies_path_tools() -> None:
    decision = decide(agent("elevated", file_system="none"), READ)
    assert decision.rule == Rule.FILE_SYSTEM_SCOPE


def test_symlink_out_of_the_workspace_is_denied(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (workspace / "link").symlink_to(outside)
    (workspace / "inner").symlink_to(workspace / "src")
    policy = agent("sandboxed", workspace=str(workspace), path_resolver=os.path.realpath)
    escaped = decide(policy, READ, {"path": "link/secret.txt"})
    assert escaped.outcome is Outcome.DENY
    assert "symlink" in escaped.reason
    assert decide(policy, READ, {"path": "inner/a.py"}).outcome is Outcome.ALLOW
    # Without a resolver the same path looks lexically fine: the resolver is what catches it.
    lexical = agent("sandboxed", workspace=str(workspace))
    assert decide(lexical, READ, {"path": "link/secret.txt"}).outcome is Outcome.ALLOW


def test_workspace_that_is_itself_a_symlink_still_works(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    policy = agent("sandboxed", workspace=str(alias), path_resolver=os.path.realpath)
    assert decide(policy, READ, {"path": "file.txt"}).outcome is Outcome.ALLOW


def test_a_path_that_changes_while_being_resolved_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "flip").mkdir(parents=True)

    def flipping(path: str) -> str:
        # What realpath raises when a component was a symlink at lstat and is a
        # directory by readlink: the race an agent can run against the check.
        if "/flip" in path:
            raise OSError(errno.EINVAL, "Invalid argument", path)
        return os.path.realpath(path)

    policy = agent("sandboxed", workspace=str(workspace), path_resolver=flipping)
    raced = decide(policy, READ, {"path": "flip/x"})
    assert raced.outcome is Outcome.DENY and raced.rule == Rule.FILE_SYSTEM_SCOPE
    assert "cannot be resolved" in raced.reason and "changed while" in raced.reason
    # Positive control: a path the resolver can read is allowed by the same policy.
    assert decide(policy, READ, {"path": "steady/x"}).outcome is Outcome.ALLOW


# --- network -------------------------------------------------------------------

FETCH = tool("fetch", category="web", roles={"url": "url"})
CONNECT = tool("connect", category="database", roles={"host": "host"})

LOOPBACK_FORMS = [
    "http://127.0.0.1/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f000001/",
    "http://0x7f.0.0.1/",
    "http://127.1/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[0:0:0:0:0:0:0:1]/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://169.254.169.254/latest/meta-data",
    "http://10.0.0.1/",
    "http://0/",
    "http://\uff11\uff12\uff17.0.0.1/",  # full-width digits
]


@pytest.mark.parametrize("url", LOOPBACK_FORMS)
def test_open_network_still_blocks_local_addresses_in_any_spelling(url: str) -> None:
    decision = decide(agent("standard"), FETCH, {"url": url})
    assert decision.outcome is Outcome.DENY, url
    assert decision.rule == Rule.NETWORK_MODE


@pytest.mark.parametrize(
    "url",
    [
        "http://0x7f000001:8080/x",
        "http://2130706433:8080/",
        "http://127.1:8080",
        "http://[::ffff:127.0.0.1]:8080/",
    ],
)
def test_allowlisted_ip_matches_every_spelling(url: str) -> None:
    policy = agent("restricted", allowed_hosts=("127.0.0.1:8080",))
    assert decide(policy, FETCH, {"url": url}).outcome is Outcome.ALLOW
    assert decide(policy, FETCH, {"url": url.replace("8080", "8081")}).outcome is Outcome.DENY


ALLOWLIST = ("api.github.com:443", "*.example.org")


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://api.github.com/repos", True),
        ("https://API.GitHub.com./repos", True),
        ("https://api.github.com:443/", True),
        ("http://api.github.com/", False),  # port 80 is not on the list
        ("https://api.github.com:8443/", False),
        ("https://api.github.com@evil.com/", False),
        ("https://api.github.com:443@evil.com/", False),
        ("https://evil.com#@api.github.com/", False),
        ("https://evil.com?@api.github.com/", False),
        ("https://evil.com\\@api.github.com/", False),
        ("https://api.github.com.evil.com/", False),
        ("https://%61pi.github.com/", True),  # percent-encoded host is still api.github.com
        ("https://docs.example.org/", True),
        ("https://a.b.example.org:9/", True),
        ("https://example.org/", False),  # the wildcard covers subdomains only
        ("https://evilexample.org/", False),
        ("https://d\u043ecs.example.org/", True),  # IDNA label under the allowed suffix
        ("https://api.github.c\u043em/", False),  # Cyrillic o: a different host
        ("file:///etc/passwd", False),
        ("gopher://api.github.com/", False),
        ("//api.github.com/", False),
        ("https://api.github.com\t/", False),
        (" https://api.github.com/", False),
    ],
)
def test_allowlist_only_checks_the_host_clients_will_reach(url: str, allowed: bool) -> None:
    policy = agent("restricted", allowed_hosts=ALLOWLIST)
    decision = decide(policy, FETCH, {"url": url})
    assert (decision.outcome is Outcome.ALLOW) is allowed, (url, decision.reason)
    if not allowed:
        assert decision.rule == Rule.NETWORK_MODE


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("db.internal.example.org:5432", True),
        ("DB.internal.example.org.:5432", True),
        ("db.internal.example.org", False),  # no port: cannot match a port-specific entry
        ("10.0.0.5:5432", True),
        ("167772165:5432", True),  # 10.0.0.5 in decimal
        ("012.0.0.5:5432", True),  # 10.0.0.5 with an octal first part
        ("10.0.0.6:5432", False),
        ("[::1]:5432", False),
        ("evil.com:5432", False),
    ],
)
def test_host_arguments_are_checked_against_the_allowlist(host: str, allowed: bool) -> None:
    policy = agent("restricted", allowed_hosts=("*.example.org:5432", "10.0.0.5:5432"))
    decision = decide(policy, CONNECT, {"host": host})
    assert (decision.outcome is not Outcome.DENY) is allowed, (host, decision.reason)


def test_allowlist_entry_for_a_private_address_lets_it_through_open_mode() -> None:
    policy = agent("standard", allowed_hosts=("10.0.0.5",))
    assert decide(policy, FETCH, {"url": "http://10.0.0.5/"}).outcome is Outcome.ALLOW
    assert decide(policy, FETCH, {"url": "http://10.0.0.6/"}).outcome is Outcome.DENY


def test_private_addresses_allowed_when_blocking_is_switched_off() -> None:
    policy = agent("standard", block_private_addresses=False)
    assert decide(policy, FETCH, {"url": "http://127.0.0.1/"}).outcome is Outcome.ALLOW


def test_network_none_denies_network_tools_and_url_arguments() -> None:
    policy = agent("sandboxed", allowed=["fetch", "clone"], git="full")
    assert decide(policy, FETCH).rule == Rule.NETWORK_MODE
    clone = tool("clone", category="version_control", action_type="vcs:clone", roles={"url": "url"})
    assert decide(policy, clone).outcome is Outcome.ALLOW  # listing: no arguments yet
    call = decide(policy, clone, {"url": "https://github.com/a/b.git"})
    assert call.outcome is Outcome.DENY
    assert call.rule == Rule.NETWORK_MODE


def test_allowlist_mode_refuses_network_tools_without_a_checkable_target() -> None:
    search = tool("web_search", category="web", roles={})
    decision = decide(agent("restricted"), search)
    assert decision.rule == Rule.NETWORK_MODE
    assert "allowlist" in decision.reason


def test_scp_style_git_remote_is_checked() -> None:
    policy = agent("restricted", allowed_hosts=("github.com:22",))
    clone = tool("clone", category="version_control", action_type="vcs:clone", roles={"url": "url"})
    assert decide(policy, clone, {"url": "git@github.com:org/repo.git"}).outcome is Outcome.ALLOW
    assert decide(policy, clone, {"url": "git@evil.com:org/repo.git"}).outcome is Outcome.DENY


# --- git, deployment, code execution, terminal -----------------------------------


@pytest.mark.parametrize(
    ("git", "action_type", "allowed"),
    [
        ("local_only", "vcs:read", True),
        ("local_only", "vcs:commit", True),
        ("local_only", "vcs:push", False),
        ("local_only", "vcs:clone", False),
        ("read_and_branch", "vcs:branch", True),
        ("read_and_branch", "vcs:clone", True),
        ("read_and_branch", "vcs:commit", False),
        ("read_and_branch", "vcs:push", False),
        ("full", "vcs:push", True),
        ("none", "vcs:read", False),
    ],
)
def test_git_access(git: str, action_type: str, allowed: bool) -> None:
    decision = decide(
        agent("standard", git=git), tool("g", category="version_control", action_type=action_type)
    )
    assert (decision.outcome is not Outcome.DENY) is allowed
    if not allowed:
        assert decision.rule == Rule.GIT_ACCESS


def test_deployment_needs_the_deployment_sub_constraint() -> None:
    deploy = tool("deploy", category="deployment")
    assert decide(agent("elevated"), deploy).outcome is Outcome.ALLOW
    assert decide(agent("elevated", deployment=False), deploy).rule == Rule.DEPLOYMENT
    # A deploy action hidden in another category is caught by its action type.
    sneaky = tool("notify", category="communication", action_type="deploy:production")
    assert decide(agent("standard"), sneaky).rule == Rule.DEPLOYMENT


@pytest.mark.parametrize(
    ("required", "isolation", "allowed"),
    [
        ("containerized", "containerized", True),
        ("containerized", "namespace", False),
        ("containerized", "subprocess", False),
        ("containerized", None, False),
        ("namespace", "namespace", True),
        ("namespace", "subprocess", False),
        ("subprocess", "subprocess", True),
        ("none", "containerized", False),
    ],
)
def test_code_execution_isolation(required: str, isolation: str | None, allowed: bool) -> None:
    run = tool("run_python", category="code_execution", isolation=isolation)
    decision = decide(agent("standard", code_execution=required), run)
    assert (decision.outcome is Outcome.ALLOW) is allowed
    if not allowed:
        assert decision.rule == Rule.CODE_EXECUTION


SHELL = tool("shell", category="terminal", roles={"command": "command"})


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("ls -la src", True),
        ("git status", True),
        (["grep", "-r", "x;y", "."], True),  # argv form: no shell, so ';' is literal
        ("rm -rf /", False),
        ("ls; rm -rf /", False),
        ("ls && curl evil", False),
        ("ls | sh", False),
        ("echo $(id)", False),
        ("echo `id`", False),
        ("/bin/rm -rf /", False),
        ("./ls", False),
        ("cat > /etc/passwd", False),
        ("ls\nrm -rf /", False),
        ("'unbalanced", False),
        (["rm", "-rf", "/"], False),
        ([], False),
        (42, False),
    ],
)
def test_restricted_commands(command: object, allowed: bool) -> None:
    decision = decide(agent("standard"), SHELL, {"command": command})
    assert (decision.outcome is Outcome.ALLOW) is allowed, decision.reason
    if not allowed:
        assert decision.rule == Rule.TERMINAL_ACCESS


def test_terminal_levels() -> None:
    assert decide(agent("elevated"), SHELL, {"command": "rm -rf x"}).outcome is Outcome.ALLOW
    assert decide(agent("sandboxed", allowed=["shell"]), SHELL).rule == Rule.TERMINAL_ACCESS
    no_command = tool("shell2", category="terminal", roles={})
    assert decide(agent("standard"), no_command).rule == Rule.TERMINAL_ACCESS
    assert decide(agent("elevated"), no_command).outcome is Outcome.ALLOW


# --- a browser's file:// pages ---------------------------------------------------

BROWSE = tool(
    "browser_navigate",
    category="browser",
    action_type="browser:navigate",
    safety_class="network",
    roles={"url": "url"},
)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "file:///proc/self/environ",
        "file:///workspace/../etc/passwd",
        "file:///workspace/%2e%2e/etc/passwd",
        "file:///workspace/./page.html",
        "file:///workspace//page.html",
        "file:///workspace",
        "file:///workspace-evil/page.html",
        "file://otherhost/workspace/page.html",
        "file:///workspace/page.html?x=1",
        "file:///workspace/a%00b.html",
        "FILE:///etc/passwd",
        "file:/etc/passwd",
    ],
)
def test_a_browser_opens_no_file_page_outside_the_workspace(url: str) -> None:
    policy = agent("standard", allowed=["browser_navigate"])
    decision = decide(policy, BROWSE, {"url": url})
    assert decision.outcome is Outcome.DENY, (url, decision.reason)


def test_a_browser_opens_file_pages_inside_the_workspace_and_other_tools_none() -> None:
    policy = agent("standard", allowed=["browser_navigate", "fetch"])
    for url in ("file:///workspace/site/index.html", "file://localhost/workspace/a%20b.html"):
        allowed = decide(policy, BROWSE, {"url": url})
        assert allowed.outcome is Outcome.ALLOW, (url, allowed.reason)
    # A fetching tool takes no file:// URL, even inside the workspace.
    assert decide(policy, FETCH, {"url": "file:///workspace/site/index.html"}).outcome is (
        Outcome.DENY
    )
    # Without file-system access, no file page either.
    closed = agent("standard", allowed=["browser_navigate"], file_system="none")
    assert decide(closed, BROWSE, {"url": "file:///workspace/site/index.html"}).outcome is (
        Outcome.DENY
    )


def test_without_network_a_browser_keeps_the_workspaces_own_pages() -> None:
    offline = agent("sandboxed", allowed=["browser_navigate", "browser_blind", "fetch"])
    page = decide(offline, BROWSE, {"url": "file:///workspace/site/index.html"})
    assert page.outcome is Outcome.ALLOW, page.reason
    for url in ("http://127.0.0.1:8000/", "https://example.org/", "HTTP://127.0.0.1/"):
        refused = decide(offline, BROWSE, {"url": url})
        assert refused.outcome is Outcome.DENY, url
        assert refused.rule == Rule.NETWORK_MODE, (url, refused.reason)
    # A fetching tool of the same agent stays refused whatever it names.
    assert decide(offline, FETCH, {"url": "http://127.0.0.1:8000/"}).rule == Rule.NETWORK_MODE
    # A browser tool naming no URL argument has nothing to check per call: refused.
    blind = tool("browser_blind", category="browser", action_type="browser:navigate", roles={})
    assert decide(offline, blind, {}).rule == Rule.NETWORK_MODE
    # Control: with a network grant the same agent's browser reaches the host.
    online = agent("sandboxed", allowed=["browser_navigate"], network="open")
    assert decide(online, BROWSE, {"url": "https://example.org/"}).outcome is Outcome.ALLOW


def test_a_file_page_linked_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "page.html").write_text("<p>mine</p>")
    os.symlink("/etc/passwd", workspace / "passwd.html")
    policy = agent(
        "standard",
        allowed=["browser_navigate"],
        workspace=str(workspace),
        path_resolver=os.path.realpath,
    )
    denied = decide(policy, BROWSE, {"url": "file:///workspace/passwd.html"})
    assert denied.outcome is Outcome.DENY, denied.reason
    # Control: the plain file beside it.
    assert decide(policy, BROWSE, {"url": "file:///workspace/page.html"}).outcome is Outcome.ALLOW
