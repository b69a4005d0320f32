"""Strict URL parsing: one reading, the one the connection will use."""

from __future__ import annotations

import pytest

from tools_app.net import EgressUrlInvalidError, parse_target
from tools_app.net.urls import HTTP_SCHEMES


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("http://allowed.example@evil.example/", "evil.example", 80),
        ("http://allowed.example:443@evil.example/x", "evil.example", 80),
        ("http://a@b@evil.example/", "evil.example", 80),
        ("http://evil.example#@allowed.example/", "evil.example", 80),
        ("http://evil.example?@allowed.example/", "evil.example", 80),
        ("HTTP://EVIL.Example./", "evil.example", 80),
        ("https://bücher.example/", "xn--bcher-kva.example", 443),
        ("http://%65vil.example/", "evil.example", 80),
        ("http://[::ffff:127.0.0.1]:8080/", "127.0.0.1", 8080),
        ("http://0x7f.1:81/", "127.0.0.1", 81),
    ],
)
def test_the_host_is_the_one_a_client_connects_to(url: str, host: str, port: int) -> None:
    target = parse_target(url)
    assert (target.host, target.port) == (host, port)


def test_fragment_is_dropped_and_path_kept() -> None:
    target = parse_target("http://example.com/a/b?q=1#frag")
    assert target.path == "/a/b?q=1"
    assert target.url() == "http://example.com/a/b?q=1"
    assert parse_target("http://example.com").path == "/"


@pytest.mark.parametrize(
    "url",
    [
        "http://allowed.example\\@evil.example/",
        "http://evil.example\\allowed.example/",
        "http://exa mple.com/",
        "http://example.com/\r\nX-Injected: 1",
        "http://example.com/\x00",
        "http://example.com\t/",
        "\x01http://example.com/",
        "http://example.com/\u2028",
        "file:///etc/passwd",
        "gopher://127.0.0.1:25/",
        "ftp://example.com/",
        "dict://example.com:11211/",
        "javascript:alert(1)",
        "//example.com/",
        "example.com/path",
        "http:///path",
        "http://:80/",
        "http://example.com:0/",
        "http://example.com:65536/",
        "http://example.com:8o/",
        "http://::1/",
        "http://[::1/",
        "http://[::1]x/",
        "http://[fe80::1%25eth0]/",
        "http://256.1.1.1/",
        "http://1.2.3.4.5/",
        "http://exa_mple..com/",
        "http://" + "a" * 9000 + ".com/",
    ],
)
def test_malformed_or_ambiguous_urls_are_refused(url: str) -> None:
    with pytest.raises(EgressUrlInvalidError) as caught:
        parse_target(url)
    assert caught.value.code == "INVALID_ARGUMENT"
    assert caught.value.reason


def test_scheme_allowlist_is_the_callers() -> None:
    assert parse_target("ssh://git@example.com/r.git", schemes=frozenset({"ssh"})).port == 22
    with pytest.raises(EgressUrlInvalidError, match="allowed: http, https"):
        parse_target("ssh://example.com/", schemes=HTTP_SCHEMES)


def test_userinfo_is_kept_apart_from_the_host() -> None:
    target = parse_target("https://user:pw@example.com/")
    assert target.userinfo == "user:pw"
    assert "user" not in target.url()
