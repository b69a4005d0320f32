"""The published OpenAPI schema tells the truth: schemathesis, with every check it
runs by default (status codes, content types, response shapes and headers,
negative data rejected, valid data accepted, unsupported methods, auth), finds
nothing for an agent, an admin and an auditor on the console `make run` starts.

The budget is a fixed number of examples per operation, mode and role (derandomised,
so a run is repeatable); calls the schema lets an agent make are governed as
always (unknown tools are 404, nothing generated reaches a real tool by name).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.generation import GenerationMode

from tests.acceptance.conftest import Console
from tests.acceptance.console import make_run_env, manage

EXAMPLES_PER_OPERATION_AND_MODE = 12
MINIMUM_CASES_PER_ROLE = 200


def _person_token(console: Console, role: str) -> dict[str, str]:
    """A personal token for a new person of ``role``, made the way the README says."""
    name = f"openapi-{role}-{uuid.uuid4().hex[:6]}"
    printed = manage(
        make_run_env(console.var_dir), "synthorg_user", "create", name, "--role", role, "--token"
    )
    return {"Authorization": f"Bearer {printed.strip().splitlines()[-1]}"}


def _agent_token(console: Console) -> dict[str, str]:
    name = sorted(console.credentials.agents)[0]
    return {"Authorization": f"Bearer {console.credentials.agents[name]}"}


ROLES: dict[str, Callable[[Console], dict[str, str]]] = {
    "agent": _agent_token,
    "admin": lambda console: _person_token(console, "admin"),
    "auditor": lambda console: _person_token(console, "auditor"),
}


def _window_in_order(ctx: Any, query: dict[str, Any] | None) -> bool:
    """`since` later than `until` is refused (400) by design, a rule between two
    parameters that OpenAPI cannot state (the parameters' descriptions say it)."""
    if not query or not query.get("since") or not query.get("until"):
        return True
    try:
        return bool(
            datetime.fromisoformat(str(query["since"]))
            <= datetime.fromisoformat(str(query["until"]))
        )
    except (TypeError, ValueError):
        return True


@pytest.mark.parametrize("role", sorted(ROLES))
def test_schemathesis_finds_nothing(console: Console, role: str) -> None:
    headers = ROLES[role](console)
    schema = schemathesis.openapi.from_url(console.base_url + "/api/schema/")
    # NUL characters are refused by design (PostgreSQL cannot store them; the schema's
    # description says so), so generated text holds none.
    schema.config.generation.update(allow_x00=False, codec="utf-8")
    schema.hook("filter_query")(_window_in_order)
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 18, [op.label for op in operations]
    failures: list[str] = []
    sent = 0

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES_PER_OPERATION_AND_MODE,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def run(case: Any) -> None:
                nonlocal sent
                sent += 1
                try:
                    case.call_and_validate(
                        base_url=console.base_url,
                        headers=dict(headers),
                        timeout=60,
                    )
                except (Exception, BaseExceptionGroup) as failure:  # every failure reported
                    failures.append(f"{role} {mode.value} {case.method} {case.path}: {failure}")  # noqa: B023

            try:
                run()
            except Unsatisfiable:
                # An operation with nothing to get wrong has no negative cases.
                assert mode is GenerationMode.NEGATIVE
    assert sent >= MINIMUM_CASES_PER_ROLE, sent
    assert not failures, f"{len(failures)} failures:\n" + "\n\n".join(failures[:40])
