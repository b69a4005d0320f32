"""Web tools: ``http_request``, ``html_to_text`` and ``extract_links``.

They run in the worker process, not in a sandbox: every byte goes through the
SSRF guard (``tools_app.net``), which is where the network policy is enforced —
strict URL parsing, allow/deny lists, every resolved address checked, the
connection pinned to the checked address, redirects re-checked hop by hop, the
response size limit applied while streaming and an overall timeout.

Settings (``tools.<tool name>`` in config; all optional):
``allowed_domains`` (a restriction; those hosts may also resolve privately),
``denied_domains`` (wins), ``timeout_seconds`` (30), ``max_response_bytes``
(1 MiB), ``max_redirects`` (5, never more), ``auth_headers`` (``{host entry:
{header: value}}``, merged last so a call cannot override them; never echoed),
``dns_server``/``dns_port`` (resolve through that server), ``max_links`` (200),
``max_text_chars`` (100 000). Sub-constraints: see ``web_policy``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from common.vocabulary.network import Endpoint
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.web.html import extract_links, html_title, html_to_text
from tools_app.builtin.web.policy import build_guard, refusal, string_list
from tools_app.contracts import ToolContract
from tools_app.net import (
    EgressDeadlineError,
    EgressError,
    EgressRequestFailedError,
    FetchLimits,
    FetchResponse,
    Resolver,
    fetch,
)
from tools_app.net.fetch import MAX_REDIRECTS_CEILING, HeaderOverrides
from tools_app.net.policy import parse_rules
from trust_app.policy.tool_view import ArgumentRole

METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
# Headers the connection itself decides; a call setting them could smuggle requests
# or point the Host header somewhere the guard never checked.
FORBIDDEN_HEADERS: Final = frozenset(
    {
        "host", "content-length", "transfer-encoding", "connection", "upgrade", "te",
        "trailer", "keep-alive", "proxy-connection", "proxy-authorization", "expect",
    }
)  # fmt: skip
_TOKEN_RE: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")
DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_MAX_BYTES: Final = 1024 * 1024
MAX_TIMEOUT: Final = 300.0

_URL_PROPERTY: Final = {
    "type": "string",
    "minLength": 1,
    "maxLength": 8192,
    "description": "Absolute http(s) URL.",
}
_TIMEOUT_PROPERTY: Final = {
    "type": "number",
    "exclusiveMinimum": 0,
    "maximum": MAX_TIMEOUT,
    "description": "Seconds for the whole exchange; capped by config.",
}


def _setting_number(settings: Mapping[str, Any], key: str, default: float) -> float:
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"config {key!r} must be a positive number"
        )
    return float(value)


def fetch_limits(settings: Mapping[str, Any], requested_timeout: object = None) -> FetchLimits:
    """Limits from config; a call may ask for a shorter timeout, never a longer one."""
    timeout = _setting_number(settings, "timeout_seconds", DEFAULT_TIMEOUT)
    if isinstance(requested_timeout, int | float) and not isinstance(requested_timeout, bool):
        timeout = min(timeout, float(requested_timeout))
    redirects = int(_setting_number(settings, "max_redirects", MAX_REDIRECTS_CEILING))
    return FetchLimits(
        timeout_seconds=timeout,
        max_response_bytes=int(_setting_number(settings, "max_response_bytes", DEFAULT_MAX_BYTES)),
        max_redirects=min(redirects, MAX_REDIRECTS_CEILING),
    )


def auth_header_lookup(settings: Mapping[str, Any]) -> HeaderOverrides:
    """``host -> headers`` from the ``auth_headers`` config (exact or ``*.domain`` keys)."""
    configured = settings.get("auth_headers") or {}
    if not isinstance(configured, Mapping):
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, "config 'auth_headers' must map hosts to headers"
        )
    table = []
    for entry, headers in configured.items():
        if not isinstance(headers, Mapping):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, f"config auth_headers[{entry!r}] must be a mapping"
            )
        (rule,) = parse_rules([str(entry)], what="auth_headers")
        table.append((rule, {str(k): str(v) for k, v in headers.items()}))

    def lookup(host: str) -> dict[str, str]:
        merged: dict[str, str] = {}
        endpoint = Endpoint(host, None, False)
        for rule, headers in table:
            if rule.port is None and rule.matches(endpoint):
                merged.update(headers)
        return merged

    return lookup


def check_headers(headers: object) -> dict[str, str]:
    """The call's headers, refusing hop-by-hop names and CR/LF/NUL in values."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "headers must be an object")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN_RE.match(name):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, f"header name {name!r} is invalid")
        if name.lower() in FORBIDDEN_HEADERS:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"header {name!r} is set by the connection itself and cannot be given",
            )
        if not isinstance(value, str) or any(ch in value for ch in "\r\n\x00"):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"header {name!r} must be a string without line breaks or NUL",
            )
        checked[name] = value
    return checked


def guarded_fetch(
    context: ToolContext,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    timeout: object = None,
    resolver: Resolver | None = None,
) -> FetchResponse:
    """One exchange through the guard built from ``context``; errors become refusals."""
    settings = context.settings
    guard = build_guard(
        context,
        allow=string_list(settings, "allowed_domains"),
        deny=string_list(settings, "denied_domains"),
        resolver=resolver,
    )
    try:
        return fetch(
            guard,
            method=method,
            url=url,
            headers=headers,
            body=body,
            limits=fetch_limits(settings, timeout),
            header_overrides=auth_header_lookup(settings),
        )
    except EgressError as exc:
        raise refusal(exc) from exc
    except EgressDeadlineError as exc:
        raise ToolFailedError(exc.message, code="TIMEOUT", timed_out=True) from exc
    except EgressRequestFailedError as exc:
        raise ToolFailedError(exc.message, code="REQUEST_FAILED") from exc


def _joined_headers(response: FetchResponse) -> dict[str, str]:
    joined: dict[str, str] = {}
    for name, value in response.headers:
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


class HttpRequestTool:
    """``http_request``: one HTTP call (GET, POST, PUT, PATCH, DELETE, HEAD) through the guard."""

    contract = ToolContract(
        name="http_request",
        category=ToolCategory.WEB,
        # It can send data out (POST, PUT, DELETE): an external communication.
        action_type="comms:external",
        safety_class=SafetyClass.NETWORK,
        idempotency="required",
        summary="Send an HTTP request to an allowed host and read the response.",
        description=(
            "Sends one HTTP request. Only public addresses and allowlisted hosts are "
            "reachable; redirects are followed (at most 5) and each hop is checked again. "
            "The response body is cut at the configured size and `truncated` says so. "
            "Credentials for a host come from configuration and cannot be set by the call."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "url": _URL_PROPERTY,
                "method": {"type": "string", "enum": list(METHODS), "default": "GET"},
                "headers": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "maxLength": 8192},
                    "maxProperties": 64,
                    "description": (
                        "Request headers. A value may refer to a named secret granted to "
                        "you for http_request, e.g. `Bearer ${secret:NAME}`: the value is "
                        "sent, never shown to you."
                    ),
                },
                "body": {"type": "string", "maxLength": 1048576},
                "timeout_seconds": _TIMEOUT_PROPERTY,
            },
            "required": ["url"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "status": {"type": "integer"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": {"type": "string"},
                "truncated": {"type": "boolean"},
                "redirects": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["url", "status", "headers", "body", "truncated", "redirects"],
            "additionalProperties": False,
        },
        failure_modes=(
            "HOST_NOT_ALLOWED: the host, or an address it resolves to, is not reachable.",
            "INVALID_ARGUMENT: the URL or a header is malformed.",
            "LIMIT_EXCEEDED: more than 5 redirects.",
        ),
        argument_roles={"url": ArgumentRole.URL},
    )

    def __init__(self, *, resolver: Resolver | None = None) -> None:
        self.resolver = resolver

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Send the request and return status, headers and body text."""
        started = time.monotonic()
        method = str(arguments.get("method", "GET")).upper()
        if method not in METHODS:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, f"method must be one of {', '.join(METHODS)}"
            )
        body = arguments.get("body")
        if body is not None and method in ("GET", "HEAD"):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, f"{method} takes no body")
        response = guarded_fetch(
            context,
            method=method,
            url=str(arguments["url"]),
            headers=check_headers(arguments.get("headers")),
            body=None if body is None else str(body).encode("utf-8"),
            timeout=arguments.get("timeout_seconds"),
            resolver=self.resolver,
        )
        text = response.text()
        structured = {
            "url": response.url,
            "status": response.status,
            "headers": _joined_headers(response),
            "body": text,
            "truncated": response.truncated,
            "redirects": list(response.redirects),
        }
        return ToolOutcome(
            content=f"HTTP {response.status} from {response.url}\n\n{text}",
            structured=structured,
            is_error=response.status >= 400,
            error_code=f"HTTP_{response.status}" if response.status >= 400 else None,
            truncated=response.truncated,
            duration_ms=int((time.monotonic() - started) * 1000),
        )


def _fetch_page(
    context: ToolContext, arguments: Mapping[str, Any], resolver: Resolver | None
) -> FetchResponse:
    response = guarded_fetch(
        context,
        method="GET",
        url=str(arguments["url"]),
        headers={"Accept": "text/html, application/xhtml+xml;q=0.9, */*;q=0.1"},
        timeout=arguments.get("timeout_seconds"),
        resolver=resolver,
    )
    if response.status >= 400:
        raise ToolFailedError(f"{response.url} answered HTTP {response.status}", code="HTTP_ERROR")
    return response


_PAGE_INPUT: Final = {
    "type": "object",
    "properties": {"url": _URL_PROPERTY, "timeout_seconds": _TIMEOUT_PROPERTY},
    "required": ["url"],
    "additionalProperties": False,
}


class HtmlToTextTool:
    """``html_to_text``: fetch a page through the guard and return its readable text."""

    contract = ToolContract(
        name="html_to_text",
        category=ToolCategory.WEB,
        # GET only: it reads external data and sends nothing but the URL.
        action_type="external_data:request",
        safety_class=SafetyClass.NETWORK,
        summary="Fetch a web page and return its readable text.",
        description=(
            "Fetches the page with GET (same host rules as http_request) and returns the "
            "title and visible text; scripts and styles are dropped and nothing is run."
        ),
        input_schema=_PAGE_INPUT,
        output_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "title": {"type": "string"},
                "text": {"type": "string"},
                "truncated": {"type": "boolean"},
            },
            "required": ["url", "title", "text", "truncated"],
            "additionalProperties": False,
        },
        argument_roles={"url": ArgumentRole.URL},
    )

    def __init__(self, *, resolver: Resolver | None = None) -> None:
        self.resolver = resolver

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Fetch and convert; the text is cut at ``max_text_chars``."""
        page = _fetch_page(context, arguments, self.resolver)
        html = page.text()
        limit = int(_setting_number(context.settings, "max_text_chars", 100_000))
        text = html_to_text(html)
        truncated = page.truncated or len(text) > limit
        text = text[:limit]
        title = html_title(html)
        return ToolOutcome(
            content=f"{title}\n\n{text}" if title else text,
            structured={"url": page.url, "title": title, "text": text, "truncated": truncated},
            truncated=truncated,
        )


class ExtractLinksTool:
    """``extract_links``: fetch a page through the guard and list its absolute http(s) links."""

    contract = ToolContract(
        name="extract_links",
        category=ToolCategory.WEB,
        action_type="external_data:request",
        safety_class=SafetyClass.NETWORK,
        summary="Fetch a web page and list its links as absolute URLs.",
        description=(
            "Fetches the page with GET (same host rules as http_request) and returns each "
            "http(s) link once, made absolute, with its text. Links are not followed."
        ),
        input_schema=_PAGE_INPUT,
        output_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "links": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"url": {"type": "string"}, "text": {"type": "string"}},
                        "required": ["url", "text"],
                        "additionalProperties": False,
                    },
                },
                "truncated": {"type": "boolean"},
            },
            "required": ["url", "links", "truncated"],
            "additionalProperties": False,
        },
        argument_roles={"url": ArgumentRole.URL},
    )

    def __init__(self, *, resolver: Resolver | None = None) -> None:
        self.resolver = resolver

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Fetch and list links, at most ``max_links``."""
        page = _fetch_page(context, arguments, self.resolver)
        limit = int(_setting_number(context.settings, "max_links", 200))
        links = extract_links(page.text(), page.url)
        truncated = page.truncated or len(links) > limit
        links = links[:limit]
        return ToolOutcome(
            content="\n".join(f"{link.url}  {link.text}".rstrip() for link in links),
            structured={
                "url": page.url,
                "links": [{"url": link.url, "text": link.text} for link in links],
                "truncated": truncated,
            },
            truncated=truncated,
        )


http_request = HttpRequestTool()
html_to_text_tool = HtmlToTextTool()
extract_links_tool = ExtractLinksTool()

TOOLS: Final = (http_request, html_to_text_tool, extract_links_tool)
