"""Web tools against real servers on loopback, reached only through explicit allowlists."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jsonschema import Draft202012Validator

from tests.tools_app.builtin.web_context import web_context
from tests.tools_app.net.servers import LoopbackDnsServer, LoopbackHttpServer, Reply, endless
from tools_app.builtin.base import (
    BuiltinTool,
    RefusalCode,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.web.tools import (
    TOOLS,
    extract_links_tool,
    html_to_text_tool,
    http_request,
)
from tools_app.contracts import ToolRegistry
from tools_app.net.dnswire import TYPE_A

PAGE = b"""<!doctype html><html><head><title> The  Page </title>
<style>body { color: red }</style><script>alert('x')</script></head>
<body><h1>Heading</h1><p>First <b>para</b>graph.</p>
<a href="/rel">Relative</a> <a href="https://example.org/abs#frag">Absolute</a>
<a href="javascript:alert(1)">js</a> <a href="mailto:a@b.c">mail</a>
<a href="/rel">Again</a> <a href="http://127.0.0.2/internal">Internal</a>
<noscript>hidden</noscript></body></html>"""


@pytest.fixture
def web() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.1") as server:
        yield server


@pytest.fixture
def private_web() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.2") as server:
        yield server


def assert_output_valid(tool: BuiltinTool, outcome: ToolOutcome) -> None:
    Draft202012Validator(tool.contract.output_schema).validate(dict(outcome.structured or {}))


def refused(tool: BuiltinTool, arguments: dict[str, object], **context: object) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        tool.run(web_context(**context), arguments)  # type: ignore[arg-type]
    return caught.value


def test_tools_satisfy_the_protocol_and_register() -> None:
    registry = ToolRegistry()
    for tool in TOOLS:
        assert isinstance(tool, BuiltinTool)
        registry.register(tool.contract)
        assert tool.contract.category == "web"
        assert tool.contract.safety_class == "network"
        assert tool.contract.argument_roles == {"url": "url"}
    assert [t.contract.name for t in TOOLS] == ["http_request", "html_to_text", "extract_links"]
    assert http_request.contract.action_type == "comms:external"
    assert html_to_text_tool.contract.action_type == "external_data:request"


def test_get_returns_status_headers_and_body(web: LoopbackHttpServer) -> None:
    web.route("/data", Reply(200, {"Content-Type": "application/json"}, b'{"ok": true}'))
    outcome = http_request.run(web_context(), {"url": web.url("/data")})
    assert_output_valid(http_request, outcome)
    assert outcome.structured is not None
    assert outcome.structured["status"] == 200
    assert outcome.structured["body"] == '{"ok": true}'
    assert outcome.structured["headers"]["content-type"] == "application/json"
    assert outcome.structured["truncated"] is False
    assert not outcome.is_error
    assert web.count("/data") == 1


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_methods_with_a_body_reach_the_server(web: LoopbackHttpServer, method: str) -> None:
    web.route("/thing", lambda r: Reply(200, body=r.method.encode() + b" " + r.body))
    outcome = http_request.run(
        web_context(),
        {"url": web.url("/thing"), "method": method, "body": "payload", "headers": {"X-A": "1"}},
    )
    assert outcome.structured is not None
    assert outcome.structured["body"] == f"{method} payload"
    assert web.requests[0].header_values("X-A") == ["1"]


def test_head_returns_no_body(web: LoopbackHttpServer) -> None:
    web.route("/h", Reply(200, body=b"not sent for HEAD"))
    outcome = http_request.run(web_context(), {"url": web.url("/h"), "method": "HEAD"})
    assert outcome.structured is not None
    assert outcome.structured["body"] == ""
    assert web.requests[0].method == "HEAD"


def test_http_error_status_is_an_error_outcome(web: LoopbackHttpServer) -> None:
    outcome = http_request.run(web_context(), {"url": web.url("/missing")})
    assert outcome.is_error
    assert outcome.error_code == "HTTP_404"


def test_get_with_a_body_is_refused(web: LoopbackHttpServer) -> None:
    error = refused(http_request, {"url": web.url("/"), "body": "x"})
    assert error.code is RefusalCode.INVALID_ARGUMENT
    assert web.count() == 0


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "internal.example"},
        {"transfer-encoding": "chunked"},
        {"Content-Length": "0"},
        {"X-Split": "a\r\nX-Injected: 1"},
        {"Bad Name": "x"},
    ],
)
def test_dangerous_headers_are_refused(web: LoopbackHttpServer, headers: dict[str, str]) -> None:
    error = refused(http_request, {"url": web.url("/"), "headers": headers})
    assert error.code is RefusalCode.INVALID_ARGUMENT
    assert web.count() == 0


def test_configured_auth_header_is_merged_last_and_never_echoed(web: LoopbackHttpServer) -> None:
    web.route("/api", Reply(200, body=b"fine"))
    settings = {"auth_headers": {"127.0.0.1": {"Authorization": "Bearer configured-secret"}}}
    outcome = http_request.run(
        web_context(settings=settings),
        {"url": web.url("/api"), "headers": {"authorization": "Bearer agent-chosen"}},
    )
    assert web.requests[0].header_values("Authorization") == ["Bearer configured-secret"]
    assert "configured-secret" not in outcome.content
    assert "configured-secret" not in repr(outcome.structured)


def test_auth_header_for_another_host_is_not_sent(web: LoopbackHttpServer) -> None:
    web.route("/api", Reply(200, body=b"fine"))
    settings = {"auth_headers": {"*.example.com": {"Authorization": "Bearer other"}}}
    http_request.run(web_context(settings=settings), {"url": web.url("/api")})
    assert web.requests[0].header_values("Authorization") == []


def test_network_mode_none_refuses_before_connecting(web: LoopbackHttpServer) -> None:
    error = refused(http_request, {"url": web.url("/")}, network="none")
    assert error.code is RefusalCode.HOST_NOT_ALLOWED
    assert web.count() == 0


def test_unknown_network_mode_fails_closed(web: LoopbackHttpServer) -> None:
    error = refused(http_request, {"url": web.url("/")}, network=None)
    assert error.code is RefusalCode.HOST_NOT_ALLOWED
    assert "network mode is unknown" in error.reason
    assert web.count() == 0


def test_host_off_the_agent_allowlist_is_refused(private_web: LoopbackHttpServer) -> None:
    error = refused(http_request, {"url": private_web.url("/")})
    assert error.code is RefusalCode.HOST_NOT_ALLOWED
    assert "not on the allowlist" in error.reason
    assert private_web.count() == 0


def test_open_mode_still_blocks_private_addresses(private_web: LoopbackHttpServer) -> None:
    error = refused(http_request, {"url": private_web.url("/")}, network="open", allowed_hosts=())
    assert "loopback" in error.reason
    assert private_web.count() == 0


def test_tool_deny_list_wins_over_the_allowlist(web: LoopbackHttpServer) -> None:
    settings = {"allowed_domains": ["127.0.0.1"], "denied_domains": ["127.0.0.1"]}
    error = refused(http_request, {"url": web.url("/")}, settings=settings)
    assert "deny list" in error.reason
    assert web.count() == 0


def test_tool_allowed_domains_restrict_even_an_open_agent(web: LoopbackHttpServer) -> None:
    settings = {"allowed_domains": ["api.example.com"]}
    error = refused(http_request, {"url": web.url("/")}, settings=settings, network="open")
    assert "not on the allowlist" in error.reason
    assert web.count() == 0


@pytest.mark.parametrize(
    "host",
    ["2130706434", "0177.0.0.2", "0x7f000002", "127.2", "[::ffff:127.0.0.2]", "[64:ff9b::7f00:2]"],
)
def test_address_disguises_of_an_unlisted_server_are_refused(
    private_web: LoopbackHttpServer, host: str
) -> None:
    error = refused(http_request, {"url": f"http://{host}:{private_web.port}/"}, network="open")
    assert error.code is RefusalCode.HOST_NOT_ALLOWED
    assert private_web.count() == 0


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "http://127.0.0.1\\@127.0.0.2/", "gopher://127.0.0.1/", "http:///x"],
)
def test_malformed_urls_are_invalid_arguments(url: str) -> None:
    assert refused(http_request, {"url": url}).code is RefusalCode.INVALID_ARGUMENT


def test_redirect_to_a_private_address_is_refused_at_that_hop(
    web: LoopbackHttpServer, private_web: LoopbackHttpServer
) -> None:
    web.route("/go", Reply(302, {"Location": private_web.url("/admin")}))
    error = refused(http_request, {"url": web.url("/go")})
    assert error.code is RefusalCode.HOST_NOT_ALLOWED
    assert private_web.count() == 0


def test_redirect_limit_is_limit_exceeded(web: LoopbackHttpServer) -> None:
    web.route("/loop", Reply(301, {"Location": "/loop"}))
    error = refused(http_request, {"url": web.url("/loop")}, settings={"max_redirects": 50})
    assert error.code is RefusalCode.LIMIT_EXCEEDED
    assert web.count("/loop") == 6  # config cannot raise the ceiling of 5


def test_endless_response_is_truncated_at_the_configured_size(web: LoopbackHttpServer) -> None:
    web.route("/endless", Reply(200, {"Content-Type": "text/plain"}, endless()))
    outcome = http_request.run(
        web_context(settings={"max_response_bytes": 4096}), {"url": web.url("/endless")}
    )
    assert outcome.truncated
    assert outcome.structured is not None
    assert outcome.structured["truncated"] is True
    assert len(outcome.structured["body"]) == 4096


def test_connection_refused_is_a_failure_not_a_refusal() -> None:
    with LoopbackHttpServer("127.0.0.1") as closed:
        url = closed.url("/")
    with pytest.raises(ToolFailedError) as caught:
        http_request.run(web_context(), {"url": url})
    assert caught.value.code == "REQUEST_FAILED"


def test_rebinding_through_the_configured_dns_server_stays_on_the_checked_address() -> None:
    def answer(name: str, qtype: int, seen: int) -> list[str]:
        if name == "app.test" and qtype == TYPE_A:
            return ["127.0.0.1"] if seen == 0 else ["127.0.0.2"]
        return []

    with (
        LoopbackDnsServer(answer) as dns,
        LoopbackHttpServer("127.0.0.1") as checked,
    ):
        checked.route("/", Reply(200, body=b"checked"))
        settings = {"dns_server": dns.host, "dns_port": dns.port}
        context = web_context(allowed_hosts=("app.test",), settings=settings)
        outcome = http_request.run(context, {"url": f"http://app.test:{checked.port}/"})
        assert outcome.structured is not None
        assert outcome.structured["body"] == "checked"
        assert dns.count("app.test", TYPE_A) == 1


def test_html_to_text_returns_title_and_visible_text(web: LoopbackHttpServer) -> None:
    web.route("/page", Reply(200, {"Content-Type": "text/html; charset=utf-8"}, PAGE))
    outcome = html_to_text_tool.run(web_context(), {"url": web.url("/page")})
    assert_output_valid(html_to_text_tool, outcome)
    assert outcome.structured is not None
    assert outcome.structured["title"] == "The Page"
    text = outcome.structured["text"]
    assert "Heading" in text
    assert "First paragraph." in text
    assert "alert" not in text
    assert "color" not in text
    assert "hidden" not in text


def test_html_to_text_cuts_at_max_text_chars(web: LoopbackHttpServer) -> None:
    web.route("/long", Reply(200, body=b"<p>" + b"word " * 1000 + b"</p>"))
    outcome = html_to_text_tool.run(
        web_context(settings={"max_text_chars": 50}), {"url": web.url("/long")}
    )
    assert outcome.truncated
    assert outcome.structured is not None
    assert len(outcome.structured["text"]) == 50


def test_extract_links_returns_absolute_http_links_without_following_them(
    web: LoopbackHttpServer, private_web: LoopbackHttpServer
) -> None:
    web.route("/page", Reply(200, {"Content-Type": "text/html"}, PAGE))
    outcome = extract_links_tool.run(web_context(), {"url": web.url("/page")})
    assert_output_valid(extract_links_tool, outcome)
    assert outcome.structured is not None
    assert outcome.structured["links"] == [
        {"url": web.url("/rel"), "text": "Relative"},
        {"url": "https://example.org/abs", "text": "Absolute"},
        {"url": "http://127.0.0.2/internal", "text": "Internal"},
    ]
    assert web.count() == 1
    assert private_web.count() == 0


def test_extract_links_honours_base_and_limit(web: LoopbackHttpServer) -> None:
    body = b'<base href="https://docs.example/v2/">' + b"".join(
        b'<a href="p%d">p</a>' % i for i in range(10)
    )
    web.route("/b", Reply(200, body=body))
    outcome = extract_links_tool.run(web_context(settings={"max_links": 3}), {"url": web.url("/b")})
    assert outcome.structured is not None
    assert [link["url"] for link in outcome.structured["links"]] == [
        "https://docs.example/v2/p0",
        "https://docs.example/v2/p1",
        "https://docs.example/v2/p2",
    ]
    assert outcome.truncated


def test_page_tools_refuse_private_pages(private_web: LoopbackHttpServer) -> None:
    for tool in (html_to_text_tool, extract_links_tool):
        assert refused(tool, {"url": private_web.url("/")}).code is RefusalCode.HOST_NOT_ALLOWED
    assert private_web.count() == 0


def test_page_tool_reports_http_errors(web: LoopbackHttpServer) -> None:
    with pytest.raises(ToolFailedError, match="HTTP 404"):
        html_to_text_tool.run(web_context(), {"url": web.url("/nope")})
