"""Parsing of URLs and hosts into the endpoint a client would reach."""

from __future__ import annotations

import pytest

from common.vocabulary.network import (
    Endpoint,
    NetworkTargetError,
    parse_host_port,
    parse_host_rule,
    parse_url,
)


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("http://2130706433/", "127.0.0.1", 80),
        ("http://0177.0.0.1/", "127.0.0.1", 80),
        ("http://0x7f000001/", "127.0.0.1", 80),
        ("http://0x7F.0x0.0.01/", "127.0.0.1", 80),
        ("http://127.1/", "127.0.0.1", 80),
        ("http://127.0.1/", "127.0.0.1", 80),
        ("https://[::1]/", "::1", 443),
        ("https://[::ffff:127.0.0.1]:8443/", "127.0.0.1", 8443),
        ("https://[::ffff:7f00:1]/", "127.0.0.1", 443),
        ("https://[::127.0.0.1]/", "127.0.0.1", 443),
        ("https://[2001:DB8::0:1]/", "2001:db8::1", 443),
        ("http://allowed@evil/", "evil", 80),
        ("http://allowed:pw@evil:81/", "evil", 81),
        ("http://a@b@evil/", "evil", 80),
        ("HTTP://Example.COM./", "example.com", 80),
        ("http://%65xample.com/", "example.com", 80),
        ("https://b\u00fccher.example/", "xn--bcher-kva.example", 443),
        ("ssh://git@host.example/repo", "host.example", 22),
        ("git@github.com:org/repo.git", "github.com", 22),
        ("wss://h.example/socket", "h.example", 443),
    ],
)
def test_parse_url_normalises(url: str, host: str, port: int) -> None:
    endpoint = parse_url(url)
    assert (endpoint.host, endpoint.port) == (host, port)


@pytest.mark.parametrize(
    "url",
    [
        "http://evil\\@allowed/",
        "http://allowed\\.evil/",
        "http:// allowed/",
        "http://allowed\t.com/",
        "http://allowed\n.com/",
        "http://256.0.0.1/",
        "http://1.2.3.4.5/",
        "http://0x100000000/",
        "http://09.0.0.1/",  # not octal
        "http://foo.123/",  # ends in a number but is not an address
        "http://[fe80::1%25eth0]/",
        "http://[::1/",
        "http://::1/",
        "http://host:99999/",
        "http://host:80a/",
        "http://%2F@/",
        "http://ho%00st/",
        "http:///",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "relative/path",
        "http://a..b/",
        "http://" + "a" * 64 + ".com/",
    ],
)
def test_ambiguous_or_invalid_urls_are_refused(url: str) -> None:
    with pytest.raises(NetworkTargetError):
        parse_url(url)


def test_parse_host_port() -> None:
    assert parse_host_port("db.example:5432") == Endpoint("db.example", 5432, False)
    assert parse_host_port("db.example") == Endpoint("db.example", None, False)
    assert parse_host_port("[::1]:5432") == Endpoint("::1", 5432, True)
    with pytest.raises(NetworkTargetError):
        parse_host_port("::1")


def test_host_rules() -> None:
    rule = parse_host_rule("*.example.org:443")
    assert rule.matches(Endpoint("a.example.org", 443, False))
    assert not rule.matches(Endpoint("example.org", 443, False))
    assert not rule.matches(Endpoint("a.example.org", 80, False))
    assert parse_host_rule("2130706433").matches(Endpoint("127.0.0.1", 1, True))
    with pytest.raises(NetworkTargetError):
        parse_host_rule("*.10.0.0.1")
    with pytest.raises(NetworkTargetError):
        parse_host_rule("*")
