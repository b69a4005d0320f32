"""The pinned-request rewrite shared by the httpx and httpx2 transports."""

from __future__ import annotations

import httpx
import httpx2
import pytest

from tools_app.net.guard import CheckedEndpoint
from tools_app.net.pinned_request import EgressPinMismatchError, pin_request

ENDPOINT = CheckedEndpoint("example.test", 443, ("192.0.2.7", "192.0.2.8"), False)


def _mismatch(host: str, port: int) -> str:
    return f"not {host}:{port}"


@pytest.mark.parametrize("client", [httpx, httpx2])
def test_https_request_goes_to_the_pinned_address_keeping_host_and_sni(client: object) -> None:
    request = client.Request("GET", "https://example.test/path?q=1")  # type: ignore[attr-defined]
    pin_request(request, ENDPOINT, _mismatch)
    assert request.url.host == "192.0.2.7"
    assert request.url.path == "/path"
    assert request.headers["Host"] == "example.test"
    assert request.extensions["sni_hostname"] == "example.test"


def test_plain_http_sets_no_sni() -> None:
    endpoint = CheckedEndpoint("example.test", 8080, ("192.0.2.7",), False)
    request = httpx.Request("GET", "http://example.test:8080/")
    pin_request(request, endpoint, _mismatch)
    assert request.url.host == "192.0.2.7"
    assert request.url.port == 8080
    assert request.headers["Host"] == "example.test:8080"
    assert "sni_hostname" not in request.extensions


@pytest.mark.parametrize(
    "url", ["https://other.test/", "https://example.test:444/", "http://example.test/"]
)
def test_another_host_or_port_is_refused_with_the_callers_sentence(url: str) -> None:
    request = httpx.Request("GET", url)
    with pytest.raises(EgressPinMismatchError, match=r"^not "):
        pin_request(request, ENDPOINT, _mismatch)
    assert request.url == httpx.URL(url)
