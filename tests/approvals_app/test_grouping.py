"""Alike pending requests grouped by agent, tool and effect shape (pure)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from approvals_app.grouping import (
    PendingFacts,
    cursor_text,
    effect_shape,
    entries_after,
    entry_position,
    inbox_entries,
    members_after,
    parse_cursor,
    request_name,
)

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def facts(
    n: int, tool: str = "write_file", agent: str = "build-bot", tier: str = "medium", **targets: Any
) -> PendingFacts:
    return PendingFacts(
        request_id=str(uuid.UUID(int=n + 1)),
        tier=tier,
        agent_id=f"id-{agent}",
        agent=agent,
        tool=tool,
        targets=targets,
        expires_at=START + timedelta(seconds=n),
        created_at=START - timedelta(minutes=10) + timedelta(seconds=n),
    )


def test_writes_under_one_folder_are_one_group_named_as_a_person_reads_it() -> None:
    flood = [facts(n, path=f"q/{n}.txt") for n in range(440)]
    others = [
        facts(500, path="notes/a.txt"),  # another folder
        facts(501, agent="docs-bot", path="q/x.txt"),  # another agent
        facts(502, tool="delete_file", path="q/1.txt"),  # another tool
        facts(503, tier="high", path="q/2.txt"),  # another risk
        facts(504, path="q/3.txt", overwrite=True),  # another flag
    ]
    tiers = inbox_entries([*reversed(flood), *others])
    medium = tiers["medium"]
    group = medium[0]
    assert group.count == 440 and group.label == "build-bot: write_file ×440 under q/"
    assert group.ids == tuple(str(uuid.UUID(int=n + 1)) for n in range(440))  # soonest first
    assert len(medium) == 5 and [e.count for e in medium[1:]] == [1, 1, 1, 1]
    assert tiers["high"][0].count == 1


def test_traversal_groups_by_the_folder_it_resolves_to_not_the_one_it_names() -> None:
    sneaky = effect_shape("write_file", {"path": "notes.txt/" + "./" * 160 + "../.git/config"})
    plain = effect_shape("write_file", {"path": ".git/HEAD"})
    notes = effect_shape("write_file", {"path": "notes.txt"})
    assert sneaky == plain and sneaky.words == "under .git/"
    assert notes != sneaky and notes.words == "in the workspace's top folder"


def test_shapes_of_other_tools() -> None:
    get = effect_shape("http_request", {"url": "https://API.example.com/a?x=1", "method": "get"})
    assert get == effect_shape(
        "http_request", {"url": "https://api.example.com/b", "method": "GET"}
    )
    assert get.words == "GET to https://api.example.com"
    post = effect_shape("http_request", {"url": "https://api.example.com/a", "method": "POST"})
    assert post != get  # the method is part of what the call does
    assert effect_shape("shell_command", {"argv": ["git", "status"]}).words == "running git"
    assert effect_shape("shell_command", {"argv": ["git", "push"]}) == effect_shape(
        "shell_command", {"argv": ["git", "status"]}
    )
    assert effect_shape("shell_command", {"argv": ["rm", "-rf"]}) != effect_shape(
        "shell_command", {"argv": ["git", "status"]}
    )
    delete = effect_shape("db_mutate", {"query": "delete from orders where id = 1"})
    assert delete.words == "DELETE on orders"
    assert delete != effect_shape("db_mutate", {"query": "DELETE FROM customers"})
    # A search text that is not SQL does not shape anything.
    assert effect_shape("memory_search", {"query": "notes about the release"}).parts == ()
    assert effect_shape("test_echo", {}).words == ""


def test_pages_and_cursors_keep_their_place() -> None:
    entries = inbox_entries([facts(n, path=f"d{n}/x.txt") for n in range(7)])["medium"]
    first, more = entries_after(entries, None, 3)
    assert [e.first.request_id for e in first] == [str(uuid.UUID(int=n + 1)) for n in range(3)]
    assert more
    cursor = parse_cursor(first[-1].cursor)
    assert cursor == entry_position(first[-1])
    rest, more = entries_after(entries, cursor, 10)
    assert len(rest) == 4 and not more
    # An entry settled meanwhile leaves no hole and repeats nothing.
    rest, _ = entries_after(entries[4:], cursor, 10)
    assert [e.key for e in rest] == [e.key for e in entries[4:]]
    for bad in ("", "1.2", "a.b.c", "1.2.ZZ", "1.2.3;drop", "9" * 30 + ".1.a"):
        assert parse_cursor(bad) is None, bad
    group = inbox_entries([facts(n, path=f"q/{n}") for n in range(5)])["medium"][0]
    assert group.after_first is not None and parse_cursor(group.after_first) is not None
    members, more = members_after(group, parse_cursor(group.after_first), 3)
    assert [m.request_id for m in members] == list(group.ids[1:4]) and more
    assert parse_cursor(cursor_text(START, START, "abc")) is not None


def test_a_request_is_named_by_what_it_acts_on_with_both_ends_of_a_long_target() -> None:
    assert request_name("write_file", "build-bot", {"path": "q/1.txt", "content": "x"}) == (
        "write_file q/1.txt by build-bot"
    )
    long = "a/" * 100 + "secret.txt"
    name = request_name("write_file", "b", {"path": long})
    assert name.endswith("secret.txt by b") and "…" in name and len(name) < 100
    assert request_name("shell_command", "b", {"argv": ["git", "push", "origin"]}) == (
        "shell_command git push origin by b"
    )
    assert request_name("test_echo", "b", {"text": "hi\nthere"}) == "test_echo hi there by b"
    assert request_name("test_echo", "b", {"n": 3}) == "test_echo by b"
