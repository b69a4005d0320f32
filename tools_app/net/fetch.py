"""One HTTP exchange through the guard: pinned connections, hand-followed redirects,
a response size limit enforced while streaming, and an overall deadline.

Redirects (301, 302, 303, 307, 308) are followed by hand, at most
``max_redirects`` times; each ``Location`` is parsed and checked again before any
connection to it. 302 and 303 turn any method but GET/HEAD into GET and drop
the body (as browsers do), 301 does so for POST; 307 and 308 keep both. When a
hop goes to another origin, the caller's ``Authorization``, ``Cookie`` and
``Proxy-Authorization`` headers are dropped; ``header_overrides`` (per-domain
auth from config) are merged last on every hop, for that hop's host.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urljoin

import httpx

from tools_app.net.deadline import WallClockDeadline
from tools_app.net.errors import (
    EgressDeadlineError,
    EgressRedirectLimitError,
    EgressRequestFailedError,
    EgressUrlInvalidError,
)
from tools_app.net.guard import CheckedTarget, EgressGuard
from tools_app.net.transport import PinnedTransport
from tools_app.net.urls import check_url_characters

REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS_CEILING: Final = 5
_ORIGIN_BOUND_HEADERS: Final = frozenset({"authorization", "cookie", "proxy-authorization"})

HeaderOverrides = Callable[[str], Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """Limits for one exchange, redirects included."""

    timeout_seconds: float = 30.0
    max_response_bytes: int = 1024 * 1024
    max_redirects: int = MAX_REDIRECTS_CEILING

    def __post_init__(self) -> None:
        if not 0 <= self.max_redirects <= MAX_REDIRECTS_CEILING:
            raise ValueError(f"max_redirects must be 0 to {MAX_REDIRECTS_CEILING}")
        if self.timeout_seconds <= 0 or self.max_response_bytes <= 0:
            raise ValueError("timeout_seconds and max_response_bytes must be positive")


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """What came back from the last hop."""

    url: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    truncated: bool
    encoding: str
    redirects: tuple[str, ...] = field(default=())
    address: str = ""

    def text(self) -> str:
        """The body decoded with the response's charset (replacement on errors)."""
        try:
            return self.body.decode(self.encoding, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def merge_headers(base: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``overrides`` applied last; names compare case-insensitively."""
    lowered = {name.lower() for name in overrides}
    merged = {k: v for k, v in base.items() if k.lower() not in lowered}
    merged.update(overrides)
    return merged


def redirect_target(current: str, location: str) -> str:
    """The absolute URL a ``Location`` header points to, or a refusal saying why not.

    The header comes from the server, not the agent: anything malformed (control
    characters, a bad host or port, an unparseable URL) is refused with the reason,
    and nothing is connected to.
    """
    shown = location[:200]
    try:
        check_url_characters(location)
        joined = urljoin(current, location)
        httpx.URL(joined)
    except EgressUrlInvalidError as exc:
        raise EgressUrlInvalidError(
            f"the server redirected to a malformed Location {shown!r} ({exc.reason}); "
            "it was not followed"
        ) from None
    except (ValueError, httpx.InvalidURL) as exc:
        raise EgressUrlInvalidError(
            f"the server redirected to a malformed Location {shown!r} ({exc}); it was not followed"
        ) from None
    return joined


def redirected_method(status: int, method: str) -> str:
    """The method the next hop uses after a ``status`` redirect."""
    if status in (302, 303) and method not in ("GET", "HEAD"):
        return "GET"
    if status == 301 and method == "POST":
        return "GET"
    return method


def _deadline_error(deadline: WallClockDeadline, who: str = "the server") -> EgressDeadlineError:
    return EgressDeadlineError(
        f"{who} did not answer in full within the {deadline.seconds:g} s time limit "
        "(connecting, headers and body together), so the request was stopped"
    )


def _remaining(deadline: WallClockDeadline) -> float:
    left = deadline.left()
    if left <= 0:
        raise _deadline_error(deadline)
    return left


def _read_body(
    response: httpx.Response, limit: int, deadline: WallClockDeadline
) -> tuple[bytes, bool]:
    """Read at most ``limit`` decoded bytes; stop (and close) as soon as it is passed."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    decoder = None
    if encoding in ("gzip", "x-gzip"):
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        decoder = zlib.decompressobj()
    body = bytearray()
    # No chunk size: each network read is handed over as it arrives, so a trickle
    # is checked against the deadline byte by byte instead of filling a buffer first.
    for chunk in response.iter_raw():
        _remaining(deadline)
        if decoder is None:
            body += chunk
        else:
            # max_length bounds what one compressed chunk may expand to (no zip bombs).
            data = chunk
            while data and len(body) <= limit:
                body += decoder.decompress(data, limit + 1 - len(body))
                data = decoder.unconsumed_tail
        if len(body) > limit:
            return bytes(body[:limit]), True
    return bytes(body), False


def fetch(
    guard: EgressGuard,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    limits: FetchLimits | None = None,
    header_overrides: HeaderOverrides | None = None,
) -> FetchResponse:
    """Send one request through ``guard`` and return the final response.

    Raises an EgressError subclass when a hop is refused (before connecting to it),
    EgressRedirectLimitError past the redirect limit and EgressRequestFailedError
    when the exchange itself fails.
    """
    limits = limits or FetchLimits()
    deadline = WallClockDeadline(limits.timeout_seconds)
    method = method.upper()
    caller_headers = dict(headers or {})
    checked = guard.check_url(url)
    redirects: list[str] = []
    while True:
        response, next_url = _exchange(
            checked, method, caller_headers, body, limits, deadline, header_overrides
        )
        if next_url is None:
            return FetchResponse(
                url=checked.target.url(),
                status=response.status,
                headers=response.headers,
                body=response.body,
                truncated=response.truncated,
                encoding=response.encoding,
                redirects=tuple(redirects),
                address=checked.endpoint.pinned_address,
            )
        if len(redirects) >= limits.max_redirects:
            raise EgressRedirectLimitError(
                f"more than {limits.max_redirects} redirects (last to {next_url[:200]}); "
                "request the final URL directly"
            )
        previous = checked.target
        try:
            checked = guard.check_url(next_url)
        except EgressUrlInvalidError as exc:
            raise EgressUrlInvalidError(
                f"the server redirected to {next_url[:200]!r}, which is refused ({exc.reason}); "
                "it was not followed"
            ) from None
        redirects.append(checked.target.url())
        if (checked.target.scheme, checked.target.host, checked.target.port) != (
            previous.scheme,
            previous.host,
            previous.port,
        ):
            caller_headers = {
                k: v for k, v in caller_headers.items() if k.lower() not in _ORIGIN_BOUND_HEADERS
            }
        new_method = redirected_method(response.status, method)
        if new_method != method:
            body = None
            caller_headers = {
                k: v
                for k, v in caller_headers.items()
                if k.lower() not in ("content-type", "content-length")
            }
        method = new_method


@dataclass(frozen=True, slots=True)
class _HopResult:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    truncated: bool
    encoding: str


def _exchange(
    checked: CheckedTarget,
    method: str,
    caller_headers: Mapping[str, str],
    body: bytes | None,
    limits: FetchLimits,
    deadline: WallClockDeadline,
    header_overrides: HeaderOverrides | None,
) -> tuple[_HopResult, str | None]:
    target = checked.target
    overrides = dict(header_overrides(target.host)) if header_overrides else {}
    # identity: compressed bodies are decoded here, bounded, not by the client.
    sent = merge_headers(merge_headers(caller_headers, overrides), {"Accept-Encoding": "identity"})
    transport = PinnedTransport(checked.endpoint, deadline=deadline)
    timeout = httpx.Timeout(min(limits.timeout_seconds, _remaining(deadline)))
    with httpx.Client(transport=transport, trust_env=False, timeout=timeout) as client:
        try:
            try:
                request = client.build_request(method, target.url(), headers=sent, content=body)
            except httpx.InvalidURL as exc:
                raise EgressUrlInvalidError(f"the URL cannot be sent: {exc}") from None
            # Straight to the transport: the client would parse a redirect's Location
            # itself and fail on a malformed one before this code could judge it.
            response = transport.handle_request(request)
            response.request = request
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    return _HopResult(response.status_code, (), b"", False, "utf-8"), (
                        redirect_target(target.url(), location)
                    )
                data, truncated = _read_body(response, limits.max_response_bytes, deadline)
                return (
                    _HopResult(
                        response.status_code,
                        tuple(response.headers.multi_items()),
                        data,
                        truncated,
                        response.charset_encoding or "utf-8",
                    ),
                    None,
                )
            finally:
                response.close()
        except httpx.TimeoutException as exc:
            if deadline.reached or deadline.left() <= 0:
                raise _deadline_error(deadline, target.authority) from exc
            raise EgressRequestFailedError(
                f"{target.authority} did not answer within {limits.timeout_seconds:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise EgressRequestFailedError(f"request to {target.authority} failed: {exc}") from exc
