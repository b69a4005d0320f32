"""Properties that hold whatever the configuration (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.trust_app.policy.factories import WORKSPACE, agent, tool
from tests.trust_app.policy.test_engine import EXPECTED_CATEGORIES
from trust_app.policy import ALL_CATEGORIES, BUILTIN_ACTION_TYPES, Outcome, decide

LEVELS = sorted(EXPECTED_CATEGORIES)

# (path, escapes the workspace?) -- labelled by hand, not by the code under test.
PATHS = [
    ("src/a.py", False),
    ("a/b/../c.txt", False),
    (f"{WORKSPACE}/x", False),
    ("../x", True),
    ("%2e%2e/x", True),
    ("..%252fx", True),
    ("..\\x", True),
    ("/etc/passwd", True),
    ("a/../../x", True),
]
# (url, kind): kind is "listed" (on the allowlist below), "public" or "local".
URLS = [
    ("https://api.github.com/x", "listed"),
    ("https://API.github.com./x", "listed"),
    ("https://api.github.com@evil.com/", "public"),
    ("https://example.net/", "public"),
    ("http://2130706433/", "local"),
    ("http://0177.0.0.1/", "local"),
    ("http://0x7f000001/", "local"),
    ("http://127.1/", "local"),
    ("http://[::1]/", "local"),
    ("http://[::ffff:127.0.0.1]/", "local"),
]
GIT_PERMITS = {
    "none": set(),
    "local_only": {"vcs:read", "vcs:commit", "vcs:branch"},
    "read_and_branch": {"vcs:read", "vcs:branch", "vcs:clone"},
    "full": {a for a in BUILTIN_ACTION_TYPES if a.startswith("vcs:")},
}

overrides_strategy = st.fixed_dictionaries(
    {},
    optional={
        "file_system": st.sampled_from(["none", "workspace_only", "project_directory", "full"]),
        "code_execution": st.sampled_from(["none", "subprocess", "namespace", "containerized"]),
        "network": st.sampled_from(["none", "allowlist_only", "open"]),
        "allowed_hosts": st.just(("api.github.com:443",)),
        "block_private_addresses": st.booleans(),
        "git": st.sampled_from(list(GIT_PERMITS)),
        "terminal": st.sampled_from(["none", "restricted_commands", "full"]),
        "deployment": st.booleans(),
        "requires_approval": st.lists(st.sampled_from(["deploy", "db:mutate", "code"]), max_size=2),
    },
)

tool_strategy = st.builds(
    lambda name, category, action_type, safety, roles, isolation: tool(
        name,
        category=category,
        action_type=action_type,
        safety_class=safety,
        roles=roles,
        isolation=isolation,
    ),
    name=st.sampled_from(["read_file", "Fetch", "deploy", "run", "shell", "x"]),
    category=st.sampled_from(ALL_CATEGORIES),
    action_type=st.sampled_from(BUILTIN_ACTION_TYPES),
    safety=st.sampled_from(["read", "write", "network", "financial", "privileged"]),
    roles=st.fixed_dictionaries({}, optional={"path": st.just("path"), "url": st.just("url")}),
    isolation=st.sampled_from([None, "subprocess", "namespace", "containerized"]),
)

arguments_strategy = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "path": st.sampled_from([p for p, _ in PATHS]),
            "url": st.sampled_from([u for u, _ in URLS]),
        },
    ),
)


def _effective(level: str, overrides: dict[str, Any]) -> Any:
    return agent(level, **overrides).constraints


@settings(max_examples=400, deadline=None)
@given(
    level=st.sampled_from(LEVELS),
    overrides=overrides_strategy,
    subject=tool_strategy,
    allow_it=st.booleans(),
    spelling=st.sampled_from(["{}", " {} ", "{}".upper(), "\t{}\n"]),
    arguments=arguments_strategy,
)
def test_denied_tool_is_never_allowed(
    level: str,
    overrides: dict[str, Any],
    subject: Any,
    allow_it: bool,
    spelling: str,
    arguments: dict[str, str] | None,
) -> None:
    denied = [
        spelling.format(subject.name).upper() if spelling == "{}" else spelling.format(subject.name)
    ]
    allowed = [subject.name] if allow_it else []
    policy = agent(level, allowed=allowed, denied=denied, **overrides)
    assert decide(policy, subject, arguments).outcome is Outcome.DENY


@settings(max_examples=600, deadline=None)
@given(
    level=st.sampled_from(LEVELS),
    overrides=overrides_strategy,
    subject=tool_strategy,
    allow_it=st.booleans(),
    arguments=arguments_strategy,
)
def test_no_decision_grants_more_than_the_level_allows(
    level: str,
    overrides: dict[str, Any],
    subject: Any,
    allow_it: bool,
    arguments: dict[str, str] | None,
) -> None:
    policy = agent(level, allowed=[subject.name] if allow_it else [], **overrides)
    decision = decide(policy, subject, arguments)
    if decision.outcome is Outcome.DENY:
        return
    c = _effective(level, overrides)
    domain = subject.action_type.split(":")[0]
    # Category: the level's own, unless explicitly allowed.
    assert allow_it or subject.category in EXPECTED_CATEGORIES[level]
    # Sub-constraints that hold whatever the arguments.
    if subject.category == "deployment" or domain == "deploy":
        assert c.deployment
    if subject.category == "version_control" or domain == "vcs":
        assert c.git.value == "full" or subject.action_type in GIT_PERMITS[c.git.value]
    # A browser with URL arguments keeps the workspace's own pages without network; each
    # URL it is given is checked below.
    pages_only = subject.category == "browser" and bool(subject.url_arguments)
    network_tool = subject.category in {"web", "browser", "external_data"}
    if (network_tool or subject.safety_class == "network") and not pages_only:
        assert c.network.value != "none"
    if subject.category == "code_execution":
        rank = {"subprocess": 1, "namespace": 2, "containerized": 3}
        assert c.code_execution.value != "none"
        assert rank.get(subject.isolation or "", 0) >= rank[c.code_execution.value]
    if subject.path_arguments or subject.category == "file_system":
        assert c.file_system.value != "none"
    # Argument checks.
    args = arguments or {}
    if "path" in args and "path" in subject.path_arguments:
        escapes = dict(PATHS)[args["path"]]
        assert c.file_system.value == "full" or not escapes
    if "url" in args and "url" in subject.url_arguments:
        kind = dict(URLS)[args["url"]]
        assert c.network.value != "none"
        if c.network.value == "allowlist_only":
            assert kind == "listed"
        if kind == "local":
            assert not c.block_private_addresses
    # Approvals are never skipped.
    if subject.safety_class == "privileged":
        assert decision.outcome is Outcome.REQUIRE_APPROVAL
        assert decision.required_approvals == 2
    if subject.safety_class == "financial":
        assert decision.outcome is Outcome.REQUIRE_APPROVAL
    patterns = c.requires_approval
    if subject.action_type in patterns or domain in patterns:
        assert decision.outcome is Outcome.REQUIRE_APPROVAL
