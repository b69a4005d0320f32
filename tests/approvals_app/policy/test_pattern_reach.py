"""What a remembered pattern would have covered, counted before it is granted (pure)."""

from __future__ import annotations

from typing import Any

from approvals_app.policy.matching import CallFacts
from approvals_app.policy.pattern_reach import (
    ASKED,
    RAN,
    REFUSED,
    PastCall,
    pattern_reach,
    pattern_text,
    suggested_pattern,
)

ROOTS = ("/srv/ws/agent",)
ROLES = {"path": "path", "url": "url", "host": "host"}


def facts(tool: str = "write_file", **arguments: Any) -> CallFacts:
    return CallFacts("a1", "locked", tool, "x", "code:write", "write", arguments, ROLES, ROOTS)


def call(n: int, fate: str, tool: str = "write_file", **arguments: Any) -> PastCall:
    return PastCall(str(n), facts(tool, **arguments), f"digest-{n}", fate, "2026-11-27T10:00:00")


def test_the_calls_a_pattern_covers_are_counted_by_what_became_of_them() -> None:
    calls = [
        call(1, RAN, path="q/a.txt"),
        call(2, ASKED, path="q/sub/b.txt"),
        call(3, REFUSED, path="q/c.txt"),
        call(4, RAN, path="other/d.txt"),
    ]
    reach = pattern_reach({"path": "q/*"}, tool="write_file", calls=calls)
    assert (reach.looked_at, reach.covered) == (4, 3)
    assert (reach.ran, reach.asked, reach.refused) == (1, 1, 1)
    assert [c.id for c in reach.examples] == ["1", "2", "3"]
    # Control: a pattern of another folder covers only that folder's call.
    other = pattern_reach({"path": "other/*"}, tool="write_file", calls=calls)
    assert (other.covered, other.ran) == (1, 1)


def test_a_path_that_climbs_out_of_the_folder_is_not_covered_as_the_grant_would_not() -> None:
    calls = [
        call(1, RAN, path="q/../.git/config"),
        call(2, RAN, path="q/./././../secrets.txt"),
        call(3, RAN, path="/srv/ws/agent/q/x.txt"),  # absolute inside the workspace: covered
    ]
    reach = pattern_reach({"path": "q/*"}, tool="write_file", calls=calls)
    assert [c.id for c in reach.examples] == ["3"]


def test_calls_of_another_tool_or_missing_the_argument_are_not_covered() -> None:
    calls = [call(1, RAN, tool="read_file", path="q/a.txt"), call(2, RAN, url="https://x.test/")]
    assert pattern_reach({"path": "q/*"}, tool="write_file", calls=calls).covered == 0


def test_the_examples_are_bounded() -> None:
    calls = [call(n, RAN, path=f"q/{n}.txt") for n in range(40)]
    reach = pattern_reach({"path": "q/*"}, tool="write_file", calls=calls, capped=True)
    assert reach.covered == 40 and len(reach.examples) == 5 and reach.capped


def test_a_starting_pattern_names_the_folder_the_origin_and_the_host() -> None:
    assert suggested_pattern(facts(path="q/notes.txt", content="x")) == {"path": "q/*"}
    assert suggested_pattern(facts(path="notes.txt")) == {"path": "*.txt"}
    assert suggested_pattern(facts(path="README")) == {"path": "README"}
    assert suggested_pattern(
        facts(tool="http_request", url="https://Docs.Example.org/a/b?c=1")
    ) == {"url": "https://docs.example.org/*"}
    assert suggested_pattern(facts(tool="git_clone", host="git.example.org")) == {
        "host": "git.example.org"
    }
    # Never a pattern that covers everything, and nothing for arguments without a role.
    assert suggested_pattern(facts(content="hello")) == {}


def test_the_pattern_reads_as_words() -> None:
    assert pattern_text({"url": "https://h/*", "path": "q/*"}) == (
        "path matches q/*, url matches https://h/*"
    )
