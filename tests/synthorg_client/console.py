"""A stand-in console: a stdlib HTTP server answering the agent API with canned data.

It follows the contract in the API document (paths, envelope, statuses,
idempotency, `wait`) closely enough to exercise the client; the console's own
end-to-end tests run the client against the real thing.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "soa_Test1234_" + "t" * 43
MAX_BODY = 16_384
TERMINAL = {"succeeded", "failed", "denied", "expired", "timed_out", "cancelled"}
STATUS_OF_CODE = {
    "invalid_argument": 400,
    "unauthenticated": 401,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "payload_too_large": 413,
    "rate_limited": 429,
    "unavailable": 503,
}
READ_FILE_L1 = {
    "name": "read_file",
    "category": "file_system",
    "action_type": "code:read",
    "safety_class": "read",
    "summary": "Read a text file in the workspace.",
    "cost_tier": "low",
}


class ApiError(Exception):
    def __init__(self, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.headers = code, message, headers or {}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class FakeConsole:
    """State of the stand-in: invocations, idempotency keys, every request seen."""

    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    invocations: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Statuses an invocation moves through on each later GET.
    plans: dict[str, list[str]] = field(default_factory=dict)
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # This many requests are served and their answers lost (the connection closed
    # without one), as when a proxy or the network fails after the console acted.
    lose_answers: int = 0

    def invocation_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith("/api/v1/invocations/")]

    def create(self, call: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        tool, arguments = call.get("tool"), call.get("arguments")
        if not isinstance(tool, str) or not isinstance(arguments, dict):
            raise ApiError("invalid_argument", "tool and arguments are required")
        if tool.startswith("error:"):
            code = tool.removeprefix("error:")
            headers = {}
            if "retry_after" in arguments:
                headers["Retry-After"] = str(arguments["retry_after"])
            raise ApiError(code, f"forced {code}", headers)
        fingerprint = json.dumps([tool, arguments], sort_keys=True)
        key = call.get("idempotency_key")
        if key is not None and key in self.keys:
            seen_fingerprint, invocation_id = self.keys[key]
            if seen_fingerprint != fingerprint:
                raise ApiError("conflict", "idempotency_key was used for another call")
            return 200, self.invocations[invocation_id]
        invocation = self._new(tool, arguments)
        if key is not None:
            self.keys[key] = (fingerprint, invocation["id"])
        return 201, invocation

    def _new(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        invocation: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "tool": tool,
            "arguments_hash": "0" * 64,
            "status": "queued",
            "decision": {"outcome": "allow", "reason": "permitted", "rule": "level:standard",
                         "trace": ["permission: allowed"]},
            "approval": None,
            "result": None,
            "error": None,
            "created_at": now,
            "updated_at": now,
        }  # fmt: skip
        if tool == "read_file":
            self._succeed(invocation, f"contents of {arguments.get('path')}")
        elif tool == "delete_all":
            invocation["status"] = "denied"
            invocation["decision"] = {"outcome": "deny", "reason": "not permitted",
                                      "rule": "denied_list", "trace": ["denied list"]}  # fmt: skip
        elif tool == "broken":
            invocation["status"] = "failed"
            invocation["error"] = {"code": "tool_error", "message": "it broke"}
        elif tool == "slow":
            self.plans[invocation["id"]] = ["queued", "running", "succeeded"]
        elif tool == "needs_approval":
            invocation["status"] = "pending_approval"
            invocation["approval"] = {
                "id": str(uuid.uuid4()),
                "status": "pending",
                "expires_at": now,
                "required_approvals": 2,
                "approvals": 0,
            }
        elif tool != "never":
            raise ApiError("invalid_argument", f"unknown tool {tool!r}")
        self.invocations[invocation["id"]] = invocation
        return invocation

    @staticmethod
    def _succeed(invocation: dict[str, Any], content: str) -> None:
        invocation["status"] = "succeeded"
        invocation["result"] = {"is_error": False, "content": content, "structured": {"n": 1},
                                "exit_code": 0, "truncated": False, "duration_ms": 3}  # fmt: skip

    def fetch(self, invocation_id: str, wait: int) -> dict[str, Any]:
        invocation = self.invocations.get(invocation_id)
        if invocation is None:
            raise ApiError("not_found", "no such invocation")
        plan = self.plans.get(invocation_id)
        if plan:
            status = plan.pop(0)
            if status == "succeeded":
                self._succeed(invocation, "slow result")
            else:
                invocation["status"] = status
        elif invocation["status"] not in TERMINAL and wait:
            # Nothing will change: hold the answer for the whole wait, as the console does.
            time.sleep(wait)
        return invocation

    def cancel(self, invocation_id: str) -> dict[str, Any]:
        invocation = self.invocations.get(invocation_id)
        if invocation is None:
            raise ApiError("not_found", "no such invocation")
        if invocation["status"] not in TERMINAL:
            invocation["status"] = "cancelled"
        return invocation


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _serve(self, method: str) -> None:
        console = self.server.console
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw and length <= MAX_BODY else None
        with console.lock:
            console.requests.append(
                Recorded(method, parts.path, parse_qs(parts.query), dict(self.headers), body)
            )
        try:
            if length > MAX_BODY:
                raise ApiError("payload_too_large", f"body over {MAX_BODY} bytes")
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                raise ApiError("unauthenticated", "a valid agent token is required")
            status, answer = self._route(method, parts.path, parse_qs(parts.query), body)
        except ApiError as exc:
            envelope = {"error": {"code": exc.code, "message": exc.message, "details": {}}}
            self._send(STATUS_OF_CODE.get(exc.code, 418), envelope, exc.headers)
            return
        with console.lock:
            lost = console.lose_answers > 0
            console.lose_answers -= int(lost)
        if lost:
            self.close_connection = True
            return
        self._send(status, answer)

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        segments = [s for s in path.split("/") if s][2:]  # drop "api", "v1"
        if method == "GET" and segments == ["me"]:
            return 200, {"name": "test-agent", "access_level": "standard",
                         "trust": {"strategy": "disabled"}, "autonomy": "semi"}  # fmt: skip
        if method == "GET" and segments == ["tools"]:
            return 200, {"tools": [READ_FILE_L1]}
        if method == "GET" and segments[:1] == ["tools"] and segments[1:2] == ["read_file"]:
            if len(segments) == 2:
                return 200, {**READ_FILE_L1, "description": "Reads.", "input_schema": {},
                             "output_schema": {}, "examples": [], "failure_modes": [],
                             "resources": ["guide"], "definition_hash": "f" * 64}  # fmt: skip
            if segments[2:] == ["resources", "guide"]:
                return 200, {"id": "guide", "media_type": "text/markdown", "content": "# Guide"}
        if segments[:1] == ["invocations"]:
            return self._invocations(method, segments[1:], query, body)
        raise ApiError("not_found", "no such endpoint or tool")

    def _invocations(
        self, method: str, rest: list[str], query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        console = self.server.console
        if method == "POST" and rest == []:
            return console.create(body or {})
        if method == "POST" and rest == ["batch"]:
            answers = []
            for call in (body or {}).get("calls", []):
                try:
                    answers.append(console.create(call)[1])
                except ApiError as exc:
                    answers.append({"id": str(uuid.uuid4()), "tool": call.get("tool"),
                                    "status": "failed", "error": {"code": exc.code,
                                    "message": exc.message}})  # fmt: skip
            return 200, {"invocations": answers}
        if method == "GET" and len(rest) == 1:
            wait = int(query.get("wait", ["0"])[0])
            if not 0 <= wait <= 60:
                raise ApiError("invalid_argument", "wait: 0 to 60 seconds")
            return 200, console.fetch(rest[0], wait)
        if method == "POST" and len(rest) == 2 and rest[1] == "cancel":
            return 200, console.cancel(rest[0])
        raise ApiError("not_found", "no such endpoint")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, console: FakeConsole) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.console = console


@contextmanager
def serving(console: FakeConsole) -> Iterator[FakeConsole]:
    """Serve `console` on a free loopback port for the duration of the block."""
    server = _Server(console)
    console.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield console
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
