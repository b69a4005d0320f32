"""One HTTP exchange through the guard, against real servers on loopback."""

from __future__ import annotations

import gzip
import socket
import threading

import pytest

from tests.tools_app.net.servers import (
    MAX_STREAM_CHUNKS,
    LoopbackDnsServer,
    LoopbackHttpServer,
    Reply,
    endless,
)
from tools_app.net import (
    DnsServerResolver,
    EgressGuard,
    EgressHostNotAllowedError,
    EgressPolicy,
    EgressRedirectLimitError,
    EgressRequestFailedError,
    EgressUrlInvalidError,
    FetchLimits,
    fetch,
)
from tools_app.net.dnswire import TYPE_A

TRUST_LOOPBACK_1 = EgressPolicy.build(trusted=["127.0.0.1"])


def loopback_guard() -> EgressGuard:
    return EgressGuard(TRUST_LOOPBACK_1, DnsServerResolver("127.0.0.1", 9))


def test_get_returns_status_headers_and_body(web: LoopbackHttpServer) -> None:
    web.route("/hello", Reply(200, {"Content-Type": "text/plain; charset=utf-8"}, b"hi there"))
    response = fetch(loopback_guard(), method="GET", url=web.url("/hello"))
    assert (response.status, response.text(), response.truncated) == (200, "hi there", False)
    assert ("content-type", "text/plain; charset=utf-8") in response.headers
    assert response.address == "127.0.0.1"
    assert web.count("/hello") == 1


def test_post_sends_body_and_headers(web: LoopbackHttpServer) -> None:
    web.route("/echo", lambda r: Reply(201, body=r.body[::-1]))
    response = fetch(
        loopback_guard(),
        method="POST",
        url=web.url("/echo"),
        headers={"X-Thing": "1", "Content-Type": "text/plain"},
        body=b"abc",
    )
    assert (response.status, response.body) == (201, b"cba")
    assert web.requests[0].header_values("x-thing") == ["1"]


def test_unlisted_loopback_server_is_refused_before_any_connection(
    private_web: LoopbackHttpServer,
) -> None:
    private_web.route("/", Reply(200, body=b"secret"))
    with pytest.raises(EgressHostNotAllowedError, match="loopback"):
        fetch(loopback_guard(), method="GET", url=private_web.url("/"))
    assert private_web.count() == 0


def test_redirect_to_a_private_address_is_refused_at_that_hop(
    web: LoopbackHttpServer, private_web: LoopbackHttpServer
) -> None:
    private_web.route("/admin", Reply(200, body=b"internal admin"))
    web.route("/go", Reply(302, {"Location": private_web.url("/admin")}))
    with pytest.raises(EgressHostNotAllowedError, match=r"127\.0\.0\.2.*loopback"):
        fetch(loopback_guard(), method="GET", url=web.url("/go"))
    assert web.count("/go") == 1
    assert private_web.count() == 0


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.2]/",
        "http://2130706434/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:70/",
        "http://127.0.0.1\\@127.0.0.2/",
    ],
)
def test_redirect_targets_are_parsed_and_checked_like_the_first_url(
    web: LoopbackHttpServer, private_web: LoopbackHttpServer, location: str
) -> None:
    web.route("/go", Reply(301, {"Location": location}))
    with pytest.raises((EgressHostNotAllowedError, EgressUrlInvalidError)):
        fetch(loopback_guard(), method="GET", url=web.url("/go"))
    assert private_web.count() == 0


def test_relative_redirects_are_followed_and_recorded(web: LoopbackHttpServer) -> None:
    web.route("/a", Reply(301, {"Location": "/b"}))
    web.route("/b", Reply(307, {"Location": "c"}))
    web.route("/c", Reply(200, body=b"done"))
    response = fetch(loopback_guard(), method="GET", url=web.url("/a"))
    assert response.body == b"done"
    assert response.redirects == (web.url("/b"), web.url("/c"))


def test_redirect_limit_is_five(web: LoopbackHttpServer) -> None:
    web.route("/loop", Reply(302, {"Location": "/loop"}))
    with pytest.raises(EgressRedirectLimitError) as caught:
        fetch(loopback_guard(), method="GET", url=web.url("/loop"))
    assert caught.value.code == "LIMIT_EXCEEDED"
    assert web.count("/loop") == 6  # the request and five redirects followed


def test_302_and_303_turn_post_into_get_and_drop_the_body(web: LoopbackHttpServer) -> None:
    web.route("/form", Reply(303, {"Location": "/after"}))
    web.route("/form302", Reply(302, {"Location": "/after"}))
    web.route("/after", Reply(200, body=b"ok"))
    for path in ("/form", "/form302"):
        fetch(loopback_guard(), method="POST", url=web.url(path), body=b"payload")
    after = [r for r in web.requests if r.path == "/after"]
    assert [(r.method, r.body) for r in after] == [("GET", b""), ("GET", b"")]


def test_307_and_308_keep_method_and_body(web: LoopbackHttpServer) -> None:
    web.route("/t", Reply(307, {"Location": "/p"}))
    web.route("/p", Reply(308, {"Location": "/final"}))
    web.route("/final", lambda r: Reply(200, body=r.method.encode() + b":" + r.body))
    response = fetch(loopback_guard(), method="PUT", url=web.url("/t"), body=b"data")
    assert response.body == b"PUT:data"


def test_response_size_limit_is_enforced_while_streaming(web: LoopbackHttpServer) -> None:
    web.route("/endless", Reply(200, {"Content-Type": "text/plain"}, endless()))
    limits = FetchLimits(max_response_bytes=100_000)
    response = fetch(loopback_guard(), method="GET", url=web.url("/endless"), limits=limits)
    assert response.truncated
    assert len(response.body) == 100_000
    # The client hung up long before the server's own bound on chunks.
    assert web.stream_stopped_early.wait(10)
    assert 100 * limits.max_response_bytes < MAX_STREAM_CHUNKS * 65536


def test_compressed_bomb_is_cut_at_the_decoded_limit(web: LoopbackHttpServer) -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))
    web.route("/bomb", Reply(200, {"Content-Encoding": "gzip"}, bomb))
    limits = FetchLimits(max_response_bytes=50_000)
    response = fetch(loopback_guard(), method="GET", url=web.url("/bomb"), limits=limits)
    assert response.truncated
    assert response.body == b"\0" * 50_000


def test_small_gzip_body_is_decoded(web: LoopbackHttpServer) -> None:
    web.route("/gz", Reply(200, {"Content-Encoding": "gzip"}, gzip.compress(b"plain text")))
    response = fetch(loopback_guard(), method="GET", url=web.url("/gz"))
    assert (response.body, response.truncated) == (b"plain text", False)


def test_header_overrides_are_merged_last_and_cannot_be_overridden(
    web: LoopbackHttpServer,
) -> None:
    web.route("/api", Reply(200, body=b"ok"))
    fetch(
        loopback_guard(),
        method="GET",
        url=web.url("/api"),
        headers={"authorization": "Bearer agent-chosen", "AUTHORIZATION": "x"},
        header_overrides=lambda host: (
            {"Authorization": "Bearer configured"} if host == "127.0.0.1" else {}
        ),
    )
    assert web.requests[0].header_values("Authorization") == ["Bearer configured"]


def test_cross_origin_redirect_drops_caller_credentials(web: LoopbackHttpServer) -> None:
    with LoopbackHttpServer("127.0.0.3") as other:
        other.route("/", Reply(200, body=b"ok"))
        web.route("/go", Reply(302, {"Location": other.url("/")}))
        guard = EgressGuard(
            EgressPolicy.build(trusted=["127.0.0.1", "127.0.0.3"]),
            DnsServerResolver("127.0.0.1", 9),
        )
        fetch(
            guard,
            method="GET",
            url=web.url("/go"),
            headers={"Authorization": "Bearer secret", "Cookie": "s=1", "X-Keep": "1"},
        )
        seen = other.requests[0]
        assert seen.header_values("Authorization") == []
        assert seen.header_values("Cookie") == []
        assert seen.header_values("X-Keep") == ["1"]


def test_server_that_never_answers_times_out() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    release = threading.Event()

    def hold() -> None:
        listener.settimeout(10)
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        release.wait(10)
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        with pytest.raises(EgressRequestFailedError, match="did not answer"):
            fetch(
                loopback_guard(),
                method="GET",
                url=f"http://127.0.0.1:{port}/",
                limits=FetchLimits(timeout_seconds=0.5),
            )
    finally:
        release.set()
        thread.join(10)
        listener.close()


# --- DNS rebinding, with a real DNS server ------------------------------------


def _pair_on_same_port() -> tuple[LoopbackHttpServer, LoopbackHttpServer]:
    for _ in range(20):
        first = LoopbackHttpServer("127.0.0.2")
        try:
            return first, LoopbackHttpServer("127.0.0.3", first.port)
        except OSError:
            first._server.server_close()
    raise AssertionError("could not bind two loopback servers on one port")


def test_dns_rebinding_cannot_move_the_connection() -> None:
    """The name answers 127.0.0.2 at check time and 127.0.0.3 afterwards.

    The connection must go to the checked address, and nothing resolves the name again.
    """

    def answer(name: str, qtype: int, seen: int) -> list[str]:
        if name != "rebind.test" or qtype != TYPE_A:
            return []
        return ["127.0.0.2"] if seen == 0 else ["127.0.0.3"]

    checked_server, rebound_server = _pair_on_same_port()
    with LoopbackDnsServer(answer) as dns, checked_server, rebound_server:
        checked_server.route("/", Reply(200, body=b"checked"))
        rebound_server.route("/", Reply(200, body=b"rebound"))
        guard = EgressGuard(
            EgressPolicy.build(trusted=["rebind.test"]), DnsServerResolver(dns.host, dns.port)
        )
        url = f"http://rebind.test:{checked_server.port}/"
        response = fetch(guard, method="GET", url=url)
        assert response.body == b"checked"
        assert response.address == "127.0.0.2"
        assert checked_server.requests[0].header_values("Host") == [
            f"rebind.test:{checked_server.port}"
        ]
        assert rebound_server.count() == 0
        assert dns.count("rebind.test", TYPE_A) == 1
        # The name really does answer differently now: a second check sees the new address.
        assert guard.check_url(url).endpoint.addresses == ("127.0.0.3",)


def test_name_resolving_to_loopback_without_allowlist_is_refused(
    private_web: LoopbackHttpServer,
) -> None:
    with LoopbackDnsServer(lambda name, qtype, seen: ["127.0.0.2", "::1"]) as dns:
        guard = EgressGuard(EgressPolicy.build(), DnsServerResolver(dns.host, dns.port))
        with pytest.raises(EgressHostNotAllowedError, match=r"resolved to 127\.0\.0\.2"):
            fetch(guard, method="GET", url=f"http://innocent.test:{private_web.port}/")
        assert dns.count("innocent.test") == 2  # A and AAAA asked, nothing connected
    assert private_web.count() == 0


def test_dns_server_resolver_returns_a_and_aaaa() -> None:
    def answer(name: str, qtype: int, seen: int) -> list[str]:
        return ["127.0.0.9", "::1"] if name == "both.test" else []

    with LoopbackDnsServer(answer) as dns:
        resolver = DnsServerResolver(dns.host, dns.port)
        assert resolver.resolve("both.test", 80) == ("127.0.0.9", "::1")
        with pytest.raises(EgressHostNotAllowedError, match="no A or AAAA"):
            resolver.resolve("missing.test", 80)
