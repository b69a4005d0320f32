"""One request to a connection's API, the same way for every tool that speaks through one
(``external_data_request``, ``slack_post``, ``metrics_query``, ``image_generate``; the CI
tools go through ``external_data_request``).

- the credential: fetched for the call (``connection_credential``), added by the
  console as ``auth.scheme`` says, to the connection's own host only, and masked in
  everything that comes back (as sent, percent-encoded, and as a Basic pair);
- the limits: ``rate_limit`` and ``max_concurrency`` of the connection, counted for
  every agent on every worker together, and ``per_agent``'s for the calling agent on
  every worker; over any, nothing is sent (nor counted) and the refusal names the
  limit, whose it is, and when to retry;
- the host: the SSRF guard (``connection_guard``: address checks, the pinned address,
  redirects only within the host) and the connection's size and time limits.

Each refusal or failure is handed to the tool's ``record`` (outcome, reason) before it
is raised, so every tool audits the requests it did not send as well as those it did.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, quote_plus, unquote_plus, urlencode

from common.config.connections import Connection
from common.vocabulary.sealing import Injection, parse_injection
from tools_app.builtin.base import RefusalCode, ToolContext, ToolFailedError, ToolRefusedError
from tools_app.builtin.external_data.connection import connection_credential, connection_guard
from tools_app.builtin.external_data.limits import (
    ConcurrencyLimit,
    Exceeded,
    RateLimit,
    connection_admission,
)
from tools_app.builtin.web.policy import refusal
from tools_app.net import (
    EgressDeadlineError,
    EgressError,
    EgressRequestFailedError,
    FetchLimits,
    FetchResponse,
    fetch,
)

REDACTED: Final = "[REDACTED]"

Record = Callable[[str, str], None]
"""``record(outcome, reason)``: the tool's audit row for a request refused or failed."""


class CredentialMask:
    """Each spelling of a connection's credential a response might carry back, masked."""

    def __init__(self, value: str, injection: Injection) -> None:
        forms = {value, quote(value, safe=""), quote_plus(value)} if value else set()
        if value and injection.kind == "basic":
            pair = f"{injection.name}:{value}" if injection.name else value
            forms.add(base64.b64encode(pair.encode("utf-8")).decode("ascii"))
        self.forms = tuple(sorted((f for f in forms if f), key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for form in self.forms:
            text = text.replace(form, REDACTED)
        return text


@dataclass(frozen=True, slots=True)
class ConnectionCredential:
    """The connection's credential for one call, how it is injected, and its mask."""

    value: str
    injection: Injection
    mask: CredentialMask

    @classmethod
    def for_call(
        cls, context: ToolContext, connection: Connection, *, tool: str
    ) -> ConnectionCredential:
        """Fetched for this call (audited as a use); empty without ``auth``."""
        injection = parse_injection(connection.auth.scheme if connection.auth else "bearer")
        value = connection_credential(context, connection, tool=tool)
        return cls(value, injection, CredentialMask(value, injection))


@dataclass(frozen=True, slots=True)
class ConnectionAnswer:
    """What the connection's host answered, with the credential masked."""

    response: FetchResponse
    mask: CredentialMask

    @property
    def text(self) -> str:
        return self.mask(self.response.text())

    def headers(self) -> dict[str, str]:
        """Response headers, repeated ones joined, the credential masked."""
        joined: dict[str, str] = {}
        for name, value in self.response.headers:
            value = self.mask(value)
            joined[name] = f"{joined[name]}, {value}" if name in joined else value
        return joined

    def header(self, name: str) -> str:
        return next((v for k, v in self.response.headers if k.lower() == name.lower()), "")


def connection_url(connection: Connection, path: str, query: Sequence[tuple[str, str]] = ()) -> str:
    """The connection's base URL, the path under it, and the query."""
    url = connection.base_url + path
    return url + "?" + urlencode(list(query), quote_via=quote) if query else url


@contextlib.contextmanager
def connection_limits(connection: Connection, record: Record, *, agent: str) -> Iterator[None]:
    """Count one request of ``agent`` against the connection's rate limits and hold its
    concurrency slots for the block (every agent's and the agent's own); over any,
    ``record`` it and raise LIMIT_EXCEEDED naming each limit and when to retry (nothing
    is sent, and nothing is counted)."""
    with connection_admission(
        connection.name,
        agent,
        rates=rate_limits(connection),
        concurrency=concurrency_limits(connection),
        hold_seconds=connection.timeout_seconds,
    ) as exceeded:
        if exceeded:
            rated = any(isinstance(over.limit, RateLimit) for over in exceeded)
            reason = limits_refusal(connection, exceeded)
            record("rate_limited" if rated else "concurrency_limited", reason)
            raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, reason)
        yield


def rate_limits(connection: Connection) -> tuple[RateLimit, ...]:
    """The connection's rate limits: each agent's own first, then every agent's."""
    found = []
    if connection.agent_rate is not None:
        found.append(RateLimit("agent", *connection.agent_rate))
    if connection.rate is not None:
        found.append(RateLimit("everyone", *connection.rate))
    return tuple(found)


def concurrency_limits(connection: Connection) -> tuple[ConcurrencyLimit, ...]:
    """The connection's concurrency limits: each agent's own first, then every agent's."""
    own = connection.agent_concurrency
    return (
        *(() if own is None else (ConcurrencyLimit("agent", own),)),
        ConcurrencyLimit("everyone", connection.max_concurrency),
    )


def limits_refusal(connection: Connection, exceeded: Sequence[Exceeded]) -> str:
    """PURE: why a request was not sent: each limit it was over, whose it is, and when
    to retry."""
    clauses = []
    for over in exceeded:
        limit, mine = over.limit, over.limit.scope == "agent"
        whose = "this agent" if mine else "every agent together"
        if isinstance(limit, RateLimit):
            own = connection.per_agent
            shown = own.rate_limit if mine and own else connection.rate_limit
            clauses.append(
                f"{whose} is over {'its own' if mine else 'its'} rate limit of {shown} "
                f"({'per_agent.rate_limit' if mine else 'rate_limit'})"
            )
        else:
            requests = "request" if limit.limit == 1 else "requests"
            which = (
                "its own concurrency limit (per_agent.max_concurrency)"
                if mine
                else "the connection's concurrency limit (max_concurrency)"
            )
            clauses.append(f"{whose} already has {limit.limit} {requests} in flight, {which}")
    waits = [over.wait for over in exceeded if over.wait is not None]
    if waits:
        retry = f"retry in {max(waits)}s"
    else:
        retry = (
            "retry in a few seconds, when a request in flight ends (each ends within "
            f"{connection.timeout_seconds:g}s)"
        )
    return f"connection {connection.name}: {'; and '.join(clauses)}; nothing was sent; {retry}"


def connection_send(
    connection: Connection,
    credential: ConnectionCredential,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    record: Record,
) -> ConnectionAnswer:
    """One request to ``url`` (on the connection's host) through its guard, the
    credential added by the console; refusals and failures recorded and raised."""
    guard = connection_guard(connection)
    injection, value = credential.injection, credential.value
    overrides: dict[str, str] = {}
    if connection.auth is not None and value:
        if injection.kind == "query":
            url = _with_query_credential(url, injection.name, value)
        else:
            overrides[injection.header] = injection.header_value(value)
    home = connection.host_entry.rpartition(":")[0].strip("[]")

    def credential_for(hop_host: str) -> Mapping[str, str]:
        # Only ever the connection's own host (the guard refuses any other anyway).
        return overrides if hop_host == home else {}

    mask = credential.mask
    try:
        response = fetch(
            guard,
            method=method,
            url=url,
            headers=dict(headers),
            body=body,
            limits=FetchLimits(
                timeout_seconds=connection.timeout_seconds,
                max_response_bytes=connection.max_response_bytes,
            ),
            header_overrides=credential_for,
        )
    except EgressError as exc:
        refused = refusal(exc)
        reason = mask(refused.reason)
        record("refused", f"refused: {reason}")
        raise ToolRefusedError(refused.code, reason) from exc
    except EgressDeadlineError as exc:
        message = mask(exc.message)
        record("timed_out", message)
        raise ToolFailedError(message, code="TIMEOUT", timed_out=True) from exc
    except EgressRequestFailedError as exc:
        message = mask(exc.message)
        record("failed", message)
        raise ToolFailedError(message, code="REQUEST_FAILED") from exc
    return ConnectionAnswer(response, mask)


def connection_exchange(
    connection: Connection,
    credential: ConnectionCredential,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    record: Record,
    agent: str,
) -> ConnectionAnswer:
    """``connection_send`` within the connection's rate and concurrency limits, every
    agent's and ``agent``'s own."""
    with connection_limits(connection, record, agent=agent):
        return connection_send(
            connection,
            credential,
            method=method,
            url=url,
            headers=headers,
            body=body,
            record=record,
        )


def _with_query_credential(url: str, name: str, value: str) -> str:
    # The console's value replaces whatever the call wrote under that name.
    base, _, query = url.partition("?")
    wanted = name.strip().casefold()
    kept = [
        pair
        for pair in query.split("&")
        if pair and unquote_plus(pair.partition("=")[0]).strip().casefold() != wanted
    ]
    kept.append(urlencode([(name, value)], quote_via=quote))
    return base + "?" + "&".join(kept)
