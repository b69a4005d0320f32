"""`Client`: the agent REST API of a SynthOrg Console over httpx."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from synthorg_client.errors import InvalidArgument, Unavailable, error_from_response
from synthorg_client.models import Call, Invocation

API_PREFIX = "/api/v1/"
# The console holds one request at most this long (`wait` is 0–60 seconds).
MAX_WAIT_PER_REQUEST = 60
DEFAULT_TIMEOUT = 30.0
# A request that got no answer (or a gateway's 502/503/504) is sent again this many
# times, after 0.5 s, then 1 s, ...: safe, since every call carries its idempotency key.
DEFAULT_RETRIES = 2
RETRY_BACKOFF_SECONDS = 0.5
RETRIED_STATUSES = frozenset({502, 503, 504})


def new_idempotency_key() -> str:
    """A fresh key for one logical call (its retries reuse it)."""
    return f"synthorg-client-{uuid.uuid4()}"


def _segment(value: str) -> str:
    return quote(str(value), safe="")


def _api_root(url: str) -> str:
    root = url.rstrip("/")
    if root.endswith(API_PREFIX.rstrip("/")):
        root = root[: -len(API_PREFIX.rstrip("/"))]
    return root + API_PREFIX


class Client:
    """An agent's connection to the console.

    `url` is the console's address (`http://host:8000`); `token` the agent's
    bearer token. `timeout` bounds each request on top of any `wait` it asks
    the console to hold it for. A request that gets no answer is sent again up
    to `retries` times; each call carries an idempotency key (a fresh one
    unless given), so a retried call still runs once. Use as a context
    manager, or call `close()`.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if retries < 0:
            raise InvalidArgument(f"retries must be at least 0, got {retries}")
        self.timeout = timeout
        self.retries = retries
        self._http = httpx.Client(
            base_url=_api_root(url),
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "User-Agent": "synthorg-client/0.1",
            },
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the underlying connections."""
        self._http.close()

    # --- transport ------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        hold: float = 0,
    ) -> Any:
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.request(
                    method, path, json=json, params=params, timeout=self.timeout + hold
                )
            except httpx.TimeoutException as exc:
                if last:
                    raise Unavailable(f"the console did not answer in time: {exc}") from exc
            except httpx.TransportError as exc:
                if last:
                    raise Unavailable(f"could not reach the console: {exc}") from exc
            else:
                if last or response.status_code not in RETRIED_STATUSES:
                    break
            time.sleep(RETRY_BACKOFF_SECONDS * 2**attempt)
        if response.is_error:
            raise error_from_response(response)
        try:
            return response.json()
        except ValueError as exc:
            raise Unavailable(
                f"the console answered HTTP {response.status_code} without JSON",
                status=response.status_code,
            ) from exc

    @staticmethod
    def _wait_step(seconds: float) -> int:
        if seconds < 0:
            raise InvalidArgument(f"wait must be at least 0 seconds, got {seconds}")
        return min(MAX_WAIT_PER_REQUEST, math.ceil(seconds))

    # --- discovery --------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        """The agent: `{name, access_level, trust, autonomy}`."""
        answer: dict[str, Any] = self._request("GET", "me/")
        return answer

    def tools(self) -> list[dict[str, Any]]:
        """L1: the tools this agent may use, one summary each."""
        return list(self._request("GET", "tools/").get("tools", []))

    def tool(self, name: str) -> dict[str, Any]:
        """L2: one tool's description, schemas, examples and resource ids."""
        answer: dict[str, Any] = self._request("GET", f"tools/{_segment(name)}/")
        return answer

    def tool_resource(self, name: str, resource_id: str) -> dict[str, Any]:
        """L3: one resource of a tool: `{id, media_type, content}`."""
        path = f"tools/{_segment(name)}/resources/{_segment(resource_id)}/"
        answer: dict[str, Any] = self._request("GET", path)
        return answer

    # --- invocations ------------------------------------------------------------

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        wait: float = 0,
        idempotency_key: str | None = None,
        task_id: str | None = None,
        purpose: str | None = None,
    ) -> Invocation:
        """Ask to run `tool`; hold up to `wait` seconds for the outcome.

        A `wait` over a minute is spread over several requests. Repeating a call
        with the same `idempotency_key` answers the same invocation. `purpose` (at most
        500 characters) says why the call is made; people deciding it read it.
        """
        started = time.monotonic()
        step = self._wait_step(wait)
        body: dict[str, Any] = {"tool": tool, "arguments": dict(arguments)}
        if step:
            body["wait"] = step
        body["idempotency_key"] = idempotency_key or new_idempotency_key()
        if task_id is not None:
            body["task_id"] = task_id
        if purpose is not None:
            body["purpose"] = purpose
        invocation = Invocation.from_json(
            self._request("POST", "invocations/", json=body, hold=step)
        )
        return self._wait_rest(invocation, wait - (time.monotonic() - started))

    def get(self, invocation_id: str, *, wait: float = 0) -> Invocation:
        """One invocation; with `wait`, held until it is terminal or the time is up."""
        if wait > MAX_WAIT_PER_REQUEST:
            return self.wait(invocation_id, wait)
        return self._fetch(invocation_id, self._wait_step(wait))

    def wait(self, invocation_id: str, timeout: float) -> Invocation:
        """Poll with `?wait=` until the invocation is terminal or `timeout` seconds pass.

        Answers the last state seen, terminal or not.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            remaining = deadline - time.monotonic()
            invocation = self._fetch(invocation_id, self._wait_step(max(0.0, remaining)))
            if invocation.is_terminal or time.monotonic() >= deadline:
                return invocation

    def _fetch(self, invocation_id: str, step: int) -> Invocation:
        params = {"wait": step} if step else None
        path = f"invocations/{_segment(invocation_id)}/"
        return Invocation.from_json(self._request("GET", path, params=params, hold=step))

    def _wait_rest(self, invocation: Invocation, remaining: float) -> Invocation:
        if invocation.is_terminal or remaining <= 0:
            return invocation
        return self.wait(invocation.id, remaining)

    def batch(
        self,
        calls: Iterable[Call | Mapping[str, Any]],
        *,
        max_concurrency: int | None = None,
        wait: float = 0,
    ) -> list[Invocation]:
        """Run several calls at once; one invocation per call, in call order.

        A call that fails does so in its own invocation and never aborts the others.
        """
        started = time.monotonic()
        step = self._wait_step(wait)
        body: dict[str, Any] = {"calls": [_keyed(c) for c in calls]}
        if max_concurrency is not None:
            body["max_concurrency"] = max_concurrency
        if step:
            body["wait"] = step
        answer = self._request("POST", "invocations/batch/", json=body, hold=step)
        invocations = [Invocation.from_json(item) for item in answer.get("invocations", [])]
        return [self._wait_rest(item, wait - (time.monotonic() - started)) for item in invocations]

    def cancel(self, invocation_id: str) -> Invocation:
        """Cancel an invocation that has not finished; answers its state after."""
        path = f"invocations/{_segment(invocation_id)}/cancel/"
        return Invocation.from_json(self._request("POST", path))


def _keyed(call: Call | Mapping[str, Any]) -> dict[str, Any]:
    """One batch entry as JSON, with its own idempotency key (a fresh one unless given)."""
    entry = call.to_json() if isinstance(call, Call) else dict(call)
    entry["idempotency_key"] = entry.get("idempotency_key") or new_idempotency_key()
    return entry
