"""Connections at load (field-level errors), agents' paths under a base URL, and the
concurrency slots in the real Redis. Each refusal sits beside what is accepted."""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager

import pytest

from common.config import ConfigError, parse_config
from common.config.connections import pattern_segments
from common.vocabulary.levels import SubConstraintOverrides
from tools_app.builtin.external_data.disclosure import disclosure_text, granted_operations
from tools_app.builtin.external_data.exchange import (
    concurrency_limits,
    limits_refusal,
    rate_limits,
)
from tools_app.builtin.external_data.limits import (
    Exceeded,
    connection_admission,
    connection_slot,
)
from tools_app.builtin.external_data.paths import (
    PathRefusedError,
    checked_segments,
    matching_operation,
)
from tools_app.builtin.external_data.tool import CallRefusedError, resolve_call


def _connection(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "name": "billing",
        "base_url": "https://api.example.com/v1/",
        "auth": {"secret": "BILLING", "scheme": "header:X-Api-Key"},
        "operations": [
            {"method": "GET", "path": "/invoices/{id}", "name": "read_invoice"},
            {"method": "POST", "path": "/invoices"},
            {"method": "GET", "path": "/files/**", "sensitive": True},
        ],
        "rate_limit": "10/min",
    }
    return {**base, **changes}


def _problems(connection: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config({"connections": [connection]})
    return str(caught.value)


def test_a_valid_connection_loads_with_its_defaults() -> None:
    (connection,) = parse_config({"connections": [_connection()]}).connections
    assert connection.base_url == "https://api.example.com/v1"
    assert connection.host_entry == "api.example.com:443"
    assert connection.rate == (10, 60)
    assert [op.resolved_kind for op in connection.operations] == ["read", "write", "read"]
    assert [op.asks_a_person for op in connection.operations] == [False, True, True]
    assert connection.auth is not None and connection.auth.scheme == "header:X-Api-Key"


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"name": "Billing"}, "connections[0].name", "lowercase letters"),
        ({"base_url": "ftp://x"}, "connections[0].base_url", "absolute http(s) URL"),
        ({"base_url": "https://u:p@x/"}, "connections[0].base_url", "user information"),
        ({"auth": {"secret": "S", "scheme": "cookie"}}, "connections[0].auth.scheme", "bearer"),
        ({"operations": [{"method": "GET", "path": "/a/../b"}]}, "operations[0].path", "'..'"),
        ({"operations": [{"method": "GET", "path": "/**/x"}]}, "operations[0].path", "last"),
        ({"operations": [{"method": "TRACE", "path": "/a"}]}, "operations[0].method", "GET"),
        ({"operations": []}, "connections[0].operations", "at least 1"),
        ({"rate_limit": "fast"}, "connections[0].rate_limit", "N/min"),
        ({"max_concurrency": 0}, "connections[0].max_concurrency", "1"),
        ({"retries": 3}, "connections[0].retries", "unknown field"),
    ],
)
def test_a_bad_connection_is_refused_naming_the_field(
    changes: dict[str, object], field: str, words: str
) -> None:
    problems = _problems(_connection(**changes))
    assert field in problems and words in problems, problems


def test_two_connections_with_one_name_are_refused() -> None:
    with pytest.raises(ConfigError, match="named twice"):
        parse_config({"connections": [_connection(), _connection()]})
    # Control: two names load.
    assert len(parse_config({"connections": [_connection(), _connection(name="crm")]}).connections)


def test_grants_are_checked_where_permissions_are_written() -> None:
    granted = SubConstraintOverrides.model_validate({"connections": ["billing", "crm:list"]})
    assert granted.connections == ("billing", "crm:list")
    for bad in ("Billing", "billing:", "bill ing"):
        with pytest.raises(ValueError, match="connection grant"):
            SubConstraintOverrides.model_validate({"connections": [bad]})


@pytest.mark.parametrize(
    "path",
    [
        "invoices/7",
        "//evil.example/x",
        "https://evil.example/x",
        "/invoices/..",
        "/invoices/./7",
        "/invoices//7",
        "/invoices/%2e%2e",
        "/invoices/%2E%2e/admin",
        "/invoices/%252e%252e",
        "/invoices/%25252e%25252e",
        "/invoices/7%2f..%2fadmin",
        "/invoices/7%5cadmin",
        "/invoices\\7",
        "/invoices/7?admin=1",
        "/invoices/7#x",
        "/invoices/7 x",
        "/invoices/%00",
        "/invoices/%ff",
    ],
)
def test_a_path_that_could_leave_the_base_is_refused(path: str) -> None:
    with pytest.raises(PathRefusedError):
        checked_segments(path)


def test_paths_under_the_base_match_their_operations() -> None:
    (connection,) = parse_config({"connections": [_connection()]}).connections
    operations = connection.operations
    assert checked_segments("/invoices/7") == ("invoices", "7")
    assert matching_operation(operations, "GET", checked_segments("/invoices/7")) is operations[0]
    assert matching_operation(operations, "POST", checked_segments("/invoices")) is operations[1]
    deep = checked_segments("/files/a/b%20c.txt")
    assert matching_operation(operations, "GET", deep) is operations[2]
    # Neither a method nor a depth the pattern does not name.
    assert matching_operation(operations, "DELETE", checked_segments("/invoices/7")) is None
    assert matching_operation(operations, "GET", checked_segments("/invoices/7/x")) is None
    assert matching_operation(operations, "GET", checked_segments("/invoices")) is None
    assert pattern_segments("/") == ()


def test_a_call_needs_the_connection_and_the_operation_granted() -> None:
    connections = parse_config({"connections": [_connection()]}).connections
    call = {"connection": "billing", "method": "GET", "path": "/invoices/7"}
    resolved = resolve_call(connections, {"connections": ["billing"]}, call)
    assert resolved.operation.label == "read_invoice"
    assert resolve_call(connections, {"connections": ["billing:read_invoice"]}, call)
    for grants in ([], ["crm"], ["billing:POST /invoices"]):
        with pytest.raises(CallRefusedError) as refused:
            resolve_call(connections, {"connections": grants}, call)
        assert refused.value.rule == "connection_not_granted"
    with pytest.raises(CallRefusedError, match="takes no body"):
        resolve_call(connections, {"connections": ["billing"]}, {**call, "body": {"a": 1}})


@pytest.mark.integration
def test_concurrency_slots_are_shared_and_freed() -> None:
    name = f"slots-{uuid.uuid4().hex[:8]}"
    with connection_slot(name, limit=2, hold_seconds=30) as first:
        with (
            connection_slot(name, limit=2, hold_seconds=30) as second,
            connection_slot(name, limit=2, hold_seconds=30) as third,
        ):
            assert (first, second, third) == (True, True, False)
        # Control: a slot given back is taken again.
        with connection_slot(name, limit=2, hold_seconds=30) as again:
            assert again is True


def test_per_agent_limits_load_beside_everyones() -> None:
    (connection,) = parse_config(
        {"connections": [_connection(per_agent={"rate_limit": "3/min", "max_concurrency": 1})]}
    ).connections
    assert connection.rate == (10, 60) and connection.agent_rate == (3, 60)
    assert connection.max_concurrency == 4 and connection.agent_concurrency == 1
    # A longer window binds even with more requests: 100/hour holds an agent that keeps
    # to 10/min for ten minutes.
    (longer,) = parse_config(
        {"connections": [_connection(per_agent={"rate_limit": "100/hour"})]}
    ).connections
    assert longer.agent_rate == (100, 3600) and longer.agent_concurrency is None
    # Without per_agent, only every agent's limits apply.
    (plain,) = parse_config({"connections": [_connection()]}).connections
    assert plain.per_agent is None and plain.agent_rate is None
    assert [r.scope for r in rate_limits(plain)] == ["everyone"]
    assert [c.scope for c in concurrency_limits(connection)] == ["agent", "everyone"]


@pytest.mark.parametrize(
    ("per_agent", "field", "words"),
    [
        ({"rate_limit": "fast"}, "connections[0].per_agent.rate_limit", "N/min"),
        ({"max_concurrency": 0}, "connections[0].per_agent.max_concurrency", "1"),
        ({"concurrency": 1}, "connections[0].per_agent.concurrency", "unknown field"),
        ({"max_concurrency": 4}, "connections[0]", "must be below max_concurrency 4"),
        ({"rate_limit": "10/min"}, "connections[0]", "never holds an agent back"),
        ({"rate_limit": "20/s"}, "connections[0]", "never holds an agent back"),
    ],
)
def test_a_bad_per_agent_limit_is_refused_naming_the_field(
    per_agent: dict[str, object], field: str, words: str
) -> None:
    problems = _problems(_connection(per_agent=per_agent))
    assert field in problems and words in problems, problems


def test_an_agent_is_told_its_own_limits() -> None:
    (connection,) = parse_config(
        {"connections": [_connection(per_agent={"rate_limit": "3/min", "max_concurrency": 1})]}
    ).connections
    granted = granted_operations((connection,), {"connections": ["billing"]})
    assert granted[0]["per_agent"] == {"rate_limit": "3/min", "max_concurrency": 1}
    text = disclosure_text(granted)
    assert "10/min for every agent together; 3/min for you; 1 of your requests at once" in text


@pytest.mark.integration
def test_one_agents_limits_leave_the_others_room() -> None:
    (connection,) = parse_config(
        {
            "connections": [
                _connection(
                    name=f"lim-{uuid.uuid4().hex[:8]}",
                    rate_limit="3/min",
                    max_concurrency=2,
                    per_agent={"rate_limit": "1/min", "max_concurrency": 1},
                )
            ]
        }
    ).connections
    rates, slots = rate_limits(connection), concurrency_limits(connection)

    def admit(agent: str) -> AbstractContextManager[tuple[Exceeded, ...]]:
        return connection_admission(
            connection.name, agent, rates=rates, concurrency=slots, hold_seconds=30
        )

    with admit("a") as first:
        assert first == ()
        # Agent a is at its own limits: refused, naming both of its own and no other.
        with admit("a") as again:
            assert {(o.limit.scope, o.wait is None) for o in again} == {
                ("agent", False),
                ("agent", True),
            }
            reason = limits_refusal(connection, again)
            assert "this agent is over its own rate limit of 1/min" in reason, reason
            assert "its own concurrency limit (per_agent.max_concurrency)" in reason
            assert "every agent together" not in reason and "retry in " in reason
        # Control: agent b goes; a's refusal used none of everyone's budget.
        with admit("b") as second:
            assert second == ()
            # Everyone's two slots are taken: agent c is refused by everyone's limit only.
            with admit("c") as third:
                assert [o.limit.scope for o in third] == ["everyone"], third
                assert "every agent together already has 2 requests in flight" in (
                    limits_refusal(connection, third)
                )
    # Slots given back; the rate windows keep a and b. c takes the third of everyone's.
    with admit("c") as fourth:
        assert fourth == ()
    with admit("d") as fifth:
        reason = limits_refusal(connection, fifth)
        assert [o.limit.scope for o in fifth] == ["everyone"], reason
        assert "every agent together is over its rate limit of 3/min (rate_limit)" in reason
