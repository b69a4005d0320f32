"""Tool annotations follow from each contract, erring on the side of caution."""

from __future__ import annotations

import pytest

from tools_app.mcp.annotations import ToolHints, tool_hints
from tools_app.registry import tool_catalog


def _hints(name: str) -> tuple[bool, bool, bool, bool]:
    contract = tool_catalog().contract(name)
    assert contract is not None
    hints = tool_hints(
        category=contract.category.value,
        action_type=contract.resolved_action_type,
        safety_class=contract.safety_class.value,
        idempotent=contract.idempotent,
    )
    return hints.read_only, hints.destructive, hints.idempotent, hints.open_world


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        # (readOnly, destructive, idempotent, openWorld)
        ("read_file", (True, False, True, False)),
        ("git_log", (True, False, True, False)),
        ("write_file", (False, True, False, False)),
        ("delete_file", (False, True, False, False)),
        ("shell_command", (False, True, False, False)),
        ("db_mutate", (False, True, False, False)),
        ("git_commit", (False, False, False, False)),
        ("git_push", (False, True, False, True)),
        ("git_clone", (False, False, False, True)),
        ("http_request", (False, True, False, True)),
        ("html_to_text", (False, False, False, True)),
        ("memory_store", (False, False, False, False)),
    ],
)
def test_each_builtin_tool_gets_the_hints_its_contract_implies(
    tool: str, expected: tuple[bool, bool, bool, bool]
) -> None:
    assert _hints(tool) == expected


def test_an_unknown_category_or_action_counts_as_destructive_and_open_world() -> None:
    hints = tool_hints(
        category="mcp", action_type="weird:thing", safety_class="write", idempotent=False
    )
    assert hints.destructive and hints.open_world and not hints.read_only


def test_a_declared_idempotent_writer_is_idempotent_but_still_destructive() -> None:
    hints = tool_hints(
        category="file_system", action_type="code:write", safety_class="write", idempotent=True
    )
    assert hints.idempotent and hints.destructive and not hints.open_world


def test_an_upstream_servers_closed_world_claim_is_passed_on_for_its_category() -> None:
    def hints(claimed: bool) -> ToolHints:
        return tool_hints(
            category="mcp", action_type="code:write", safety_class="write", idempotent=False,
            closed_world_claimed=claimed,
        )  # fmt: skip

    claimed = hints(True)
    assert not claimed.open_world
    # The claim changes nothing else: still a destructive write.
    assert claimed.destructive and not claimed.read_only and not claimed.idempotent
    # Control: without the claim, the same tool reaches an open world.
    assert hints(False).open_world


def test_a_closed_world_claim_never_stands_against_a_class_that_reaches_out() -> None:
    network = tool_hints(
        category="mcp", action_type="code:write", safety_class="network", idempotent=False,
        closed_world_claimed=True,
    )  # fmt: skip
    pushing = tool_hints(
        category="mcp", action_type="comms:external", safety_class="write", idempotent=False,
        closed_world_claimed=True,
    )  # fmt: skip
    assert network.open_world and pushing.open_world
