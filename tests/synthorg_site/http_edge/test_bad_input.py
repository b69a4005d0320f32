"""Bad input through real HTTP: a 4xx in the envelope naming the field and what is
allowed, an audit row, nothing half-written; beside each, the same request made valid."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import pytest
from django.conf import settings

from tests.synthorg_site.http_edge.conftest import (
    assert_envelope,
    invocations_of,
    refusals_for,
)
from tests.tools_app.api.conftest import AgentClient

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

JSON = {"Content-Type": "application/json"}


def post_raw(client: AgentClient, path: str, raw: bytes | str) -> httpx.Response:
    return client.http.post(path, content=raw, headers=JSON)


def test_json_nested_ten_thousand_deep_is_400_naming_the_limit(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    deep = '{"tool": "test_echo", "arguments": {"text": "x"}, "x": ' + "[" * 10_000 + "]" * 10_000
    response = client.http.post("/api/v1/invocations/", content=deep + "}", headers=JSON)
    limit = settings.SYNTHORG_JSON_MAX_DEPTH
    error = assert_envelope(response, 400, "invalid_argument", f"at most {limit} levels")
    assert error["details"]["max_depth"] == limit
    [event] = refusals_for(response)
    assert event.agent_id == client.agent.id and event.outcome == "invalid_argument"
    assert invocations_of(client) == 0
    # Positive control: nesting within the limit is accepted.
    shallow = {"tool": "test_echo", "arguments": {"text": "x"}, "task_id": "t"}
    assert client.http.post("/api/v1/invocations/", json=shallow).status_code == 201


@pytest.mark.parametrize("literal", ["1e309", "-1e400", "NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused_with_their_path(
    literal: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    raw = '{"tool": "test_echo", "arguments": {"text": "x", "seconds": LITERAL}}'
    raw = raw.replace("LITERAL", literal)
    response = post_raw(client, "/api/v1/invocations/", raw)
    error = assert_envelope(
        response, 400, "invalid_argument", "arguments.seconds", literal, "finite"
    )
    assert error["details"]["field"] == "arguments.seconds"
    assert len(refusals_for(response)) == 1
    assert invocations_of(client) == 0
    # Positive control: a finite number in the same place.
    fine = post_raw(client, "/api/v1/invocations/", raw.replace(literal, "0.5"))
    assert fine.status_code == 201, fine.text


def test_a_batch_with_one_non_finite_number_creates_nothing(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    good = '{"tool": "test_echo", "arguments": {"text": "a"}}'
    bad = '{"tool": "test_echo", "arguments": {"text": "b", "seconds": 1e309}}'
    raw = '{"calls": [' + ", ".join((good, bad, good)) + "]}"
    response = post_raw(client, "/api/v1/invocations/batch/", raw)
    assert_envelope(response, 400, "invalid_argument", "calls[1].arguments.seconds", "1e309")
    assert invocations_of(client) == 0, "no call of a refused batch may be created"
    assert len(refusals_for(response)) == 1
    # Positive control: the batch made valid runs every call and answers every id.
    fixed = post_raw(client, "/api/v1/invocations/batch/", raw.replace("1e309", "1"))
    assert fixed.status_code == 200, fixed.text
    ids = [entry["id"] for entry in fixed.json()["invocations"]]
    assert len(ids) == 3 and all(ids)
    assert invocations_of(client) == 3


def test_a_batch_with_one_malformed_call_creates_nothing_and_says_which(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    calls: list[dict[str, object]] = [
        {"tool": "test_echo", "arguments": {"text": "a"}},
        {"arguments": {"text": "no tool"}},
    ]
    response = client.http.post("/api/v1/invocations/batch/", json={"calls": calls})
    error = assert_envelope(response, 400, "invalid_argument", "calls[1].tool", "required")
    assert error["details"]["fields"] == {"calls[1].tool": ["This field is required."]}
    assert invocations_of(client) == 0
    assert len(refusals_for(response)) == 1
    calls[1]["tool"] = "test_echo"
    assert client.http.post("/api/v1/invocations/batch/", json={"calls": calls}).status_code == 200


@pytest.mark.parametrize("value", [2**63, 2**31, 10**30, 0, -1, 51])
def test_batch_max_concurrency_out_of_range_names_the_range(
    value: int, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    body = {"calls": [{"tool": "test_echo", "arguments": {"text": "a"}}], "max_concurrency": value}
    response = client.http.post("/api/v1/invocations/batch/", json=body)
    high = settings.SYNTHORG_BATCH_MAX_CALLS
    assert_envelope(response, 400, "invalid_argument", "max_concurrency", f"from 1 to {high}")
    assert invocations_of(client) == 0
    assert len(refusals_for(response)) == 1
    body["max_concurrency"] = high
    assert client.http.post("/api/v1/invocations/batch/", json=body).status_code == 200


def test_wait_out_of_range_names_the_range(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    response = client.call("test_echo", {"text": "x"}, wait=2**70)
    assert_envelope(response, 400, "invalid_argument", "wait", "from 0 to 60")
    assert invocations_of(client) == 0
    assert client.call("test_echo", {"text": "x"}, wait=0).status_code == 201


def test_post_without_the_trailing_slash_is_served(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    body = {"tool": "test_echo", "arguments": {"text": "no slash"}}
    response = client.http.post("/api/v1/invocations", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["tool"] == "test_echo"
    with_slash = client.http.post("/api/v1/invocations/", json=body)
    assert with_slash.status_code == 201
    assert invocations_of(client) == 2
    # A path that exists neither way is a JSON 404 (never a redirect).
    missing = client.http.post("/api/v1/invocationz", json=body)
    assert_envelope(missing, 404, "not_found", "/api/v1/invocationz")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nothing-here/",
        "/api/v1/invocations/not-a-uuid/",
        "/api/v2/",
        "/api/",
        "/mcp/anything",
    ],
)
def test_unknown_api_paths_are_json_404s(path: str, make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    response = client.http.get(path)
    assert_envelope(response, 404, "not_found", path)
    assert "<html" not in response.text.lower()
    assert len(refusals_for(response)) == 1
    assert client.http.get("/api/v1/tools/").status_code == 200


def test_wrong_method_is_405_method_not_allowed(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    response = client.http.delete("/api/v1/invocations/")
    error = assert_envelope(response, 405, "method_not_allowed", "DELETE")
    assert "POST" in response.headers["Allow"]
    assert error["code"] == "method_not_allowed"
    assert len(refusals_for(response)) == 1
    assert client.call("test_echo", {"text": "x"}).status_code == 201


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_body_that_is_not_json_is_415(
    content_type: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    response = client.http.post(
        "/api/v1/invocations/", content=b"tool=test_echo", headers={"Content-Type": content_type}
    )
    error = assert_envelope(response, 415, "unsupported_media_type", "application/json")
    assert error["details"]["allowed"] == ["application/json"]
    assert len(refusals_for(response)) == 1
    assert invocations_of(client) == 0
    good = json.dumps({"tool": "test_echo", "arguments": {"text": "x"}})
    assert post_raw(client, "/api/v1/invocations/", good).status_code == 201


def test_multipart_with_a_bad_boundary_is_refused_in_the_envelope(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    response = client.http.post(
        "/api/v1/invocations/",
        content=b"--nope\r\nContent-Disposition: form-data\r\n\r\nx\r\n",
        headers={"Content-Type": "multipart/form-data; boundary=" + "x" * 300},
    )
    assert_envelope(
        response, 415, "unsupported_media_type", "multipart/form-data", "application/json"
    )
    assert len(refusals_for(response)) == 1


def test_malformed_json_is_audited(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    response = post_raw(client, "/api/v1/invocations/", b"{not json")
    assert_envelope(response, 400, "invalid_argument", "not valid JSON")
    [event] = refusals_for(response)
    assert event.actor_type == "agent" and event.actor_name == client.agent.name
    assert event.data["path"] == "/api/v1/invocations/" and event.status == "400"


def _chunks(*parts: bytes) -> Iterator[bytes]:
    yield from parts


def test_a_chunked_body_is_read(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    body = json.dumps({"tool": "test_echo", "arguments": {"text": "chunked"}}).encode()
    response = client.http.post(
        "/api/v1/invocations/", content=_chunks(body[:10], body[10:]), headers=JSON
    )
    assert response.request.headers.get("transfer-encoding") == "chunked"
    assert response.status_code == 201, response.text
    assert response.json()["tool"] == "test_echo"


def test_a_chunked_body_over_the_limit_is_413(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    limit = settings.SYNTHORG_MAX_REQUEST_BYTES
    piece = b" " * 65536
    count = limit // len(piece) + 2
    head = b'{"tool": "test_echo", "arguments": {"text": "x"}}'
    response = client.http.post(
        "/api/v1/invocations/", content=_chunks(head, *([piece] * count)), headers=JSON
    )
    assert response.request.headers.get("transfer-encoding") == "chunked"
    error = assert_envelope(response, 413, "payload_too_large", str(limit))
    assert error["details"]["limit_bytes"] == limit
    [event] = refusals_for(response)
    assert event.agent_id == client.agent.id and event.outcome == "payload_too_large"
    assert invocations_of(client) == 0
    # Positive control: the same body, chunked, just under the limit.
    fits = head + b" " * (limit - len(head) - 10)
    under = client.http.post(
        "/api/v1/invocations/", content=_chunks(fits[:1000], fits[1000:]), headers=JSON
    )
    assert under.status_code == 201, under.text


def test_a_declared_length_over_the_limit_is_413(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    limit = settings.SYNTHORG_MAX_REQUEST_BYTES
    response = client.call("test_echo", {"text": "x" * (limit + 10)})
    assert_envelope(response, 413, "payload_too_large", str(limit))
    assert len(refusals_for(response)) == 1
    assert invocations_of(client) == 0


def test_a_nul_in_a_query_parameter_is_400(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    created = client.call("test_echo", {"text": "x"}).json()
    response = client.http.get(f"/api/v1/invocations/{created['id']}/?wait=%00")
    assert_envelope(response, 400, "invalid_argument", "query parameter wait", "NUL")
    assert len(refusals_for(response)) == 1
    assert client.http.get(f"/api/v1/invocations/{created['id']}/?wait=0").status_code == 200
