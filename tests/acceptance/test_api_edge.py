"""On the console `make run` starts (dev settings, DEBUG on), /api/ answers every
error in the envelope: never the debug pages (which list the URL table)."""

from __future__ import annotations

from contextlib import closing

import httpx

from tests.acceptance.conftest import Console


def _agent(console: Console) -> httpx.Client:
    return console.agent(sorted(console.credentials.agents)[0])


def test_an_unknown_path_is_a_json_404_not_the_debug_page(console: Console) -> None:
    with closing(_agent(console)) as http:
        answer = http.get("/api/v1/no-such-thing/")
        assert answer.status_code == 404
        assert answer.headers["content-type"].startswith("application/json")
        assert answer.json()["error"]["code"] == "not_found"
        assert "urlpatterns" not in answer.text and "<html" not in answer.text.lower()
        # Positive control: a real path answers.
        assert http.get("/api/v1/tools/").status_code == 200


def test_a_post_without_the_trailing_slash_is_served_not_a_500(console: Console) -> None:
    with closing(_agent(console)) as http:
        body = {"tool": "no_such_tool_here", "arguments": {}}
        without = http.post("/api/v1/invocations", json=body)
        with_slash = http.post("/api/v1/invocations/", json=body)
        # Both reach the view, which refuses the unknown tool the same way.
        assert without.status_code == with_slash.status_code == 404
        assert without.json()["error"]["message"] == with_slash.json()["error"]["message"]


def test_deep_json_is_a_400_not_a_server_error(console: Console) -> None:
    with closing(_agent(console)) as http:
        deep = "[" * 10_000 + "]" * 10_000
        answer = http.post(
            "/api/v1/invocations/", content=deep, headers={"Content-Type": "application/json"}
        )
        assert answer.status_code == 400
        assert "levels" in answer.json()["error"]["message"]
