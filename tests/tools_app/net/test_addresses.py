"""Every disguise of a blocked address is refused before any resolution or connection."""

from __future__ import annotations

import pytest

from tests.tools_app.net.servers import StaticResolver
from tools_app.net import EgressGuard, EgressHostNotAllowedError, EgressPolicy
from tools_app.net.addresses import blocked_reason, embedded_ipv4, parse_address

BLOCKED_URLS = [
    ("http://127.0.0.1/", "loopback"),
    ("http://2130706433/", "loopback"),  # decimal
    ("http://0177.0.0.1/", "loopback"),  # octal
    ("http://0x7f000001/", "loopback"),  # hex
    ("http://0x7f.0.0.1/", "loopback"),  # hex first octet
    ("http://127.1/", "loopback"),  # short form
    ("http://017700000001/", "loopback"),  # octal whole
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),  # IPv4-mapped
    ("http://[::ffff:7f00:1]/", "loopback"),  # IPv4-mapped, hex
    ("http://[::127.0.0.1]/", "loopback"),  # IPv4-compatible
    ("http://[2002:7f00:1::1]/", "6to4"),  # 6to4 carrying 127.0.0.1
    ("http://[2002:a00:1::]/", "6to4"),  # 6to4 carrying 10.0.0.1
    ("http://[64:ff9b::7f00:1]/", "NAT64"),  # NAT64 carrying 127.0.0.1
    ("http://[64:ff9b::a9fe:a9fe]/", "metadata"),  # NAT64 carrying 169.254.169.254
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"),
    ("http://[2001:0:5db8:d822::a247:27dd]/", "special-purpose"),  # Teredo, public ends
    ("http://10.0.0.1/", "10.0.0.0/8"),
    ("http://172.16.5.4/", "172.16.0.0/12"),
    ("http://192.168.1.1/", "192.168.0.0/16"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://169.254.1.1/", "link-local"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://168.63.129.16/", "metadata"),
    ("http://[fd00:ec2::254]/", "metadata"),
    ("http://[::ffff:169.254.169.254]/", "metadata"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
    ("http://METADATA.Google.Internal./", "metadata"),
    ("http://metadata.azure.com/", "metadata"),
    ("http://224.0.0.1/", "unicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "unicast"),
    ("http://0.0.0.0/", "unicast"),
    ("http://0/", "unicast"),
    ("http://0.1.2.3/", "0.0.0.0/8"),
    ("http://192.0.2.1/", "documentation"),
    ("http://198.51.100.7/", "documentation"),
    ("http://203.0.113.9/", "documentation"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://192.0.0.8/", "IETF protocol"),
    ("http://[2001:db8::1]/", "documentation"),
    ("http://[fc00::1]/", "unique-local"),
    ("http://[fd12:3456::1]/", "unique-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[::]/", "unicast"),
    ("http://[ff02::1]/", "unicast"),
    ("http://[100::1]/", "discard"),
]


@pytest.mark.parametrize(("url", "named"), BLOCKED_URLS)
def test_blocked_address_forms_are_refused_without_resolution(url: str, named: str) -> None:
    resolver = StaticResolver({})
    guard = EgressGuard(EgressPolicy.build(), resolver)
    with pytest.raises(EgressHostNotAllowedError) as caught:
        guard.check_url(url)
    assert caught.value.code == "HOST_NOT_ALLOWED"
    assert named.lower() in caught.value.reason.lower()
    assert resolver.asked == []


@pytest.mark.parametrize(
    "url",
    [
        "http://93.184.216.34/",
        "http://1572395042/",  # 93.184.216.34 in decimal
        "https://[2606:2800:220:1:248:1893:25c8:1946]/",
        "http://[2002:5db8:d822::1]/",  # 6to4 carrying a public address
        "http://[64:ff9b::5db8:d822]/",  # NAT64 carrying a public address
    ],
)
def test_public_addresses_pass_the_check(url: str) -> None:
    # Only the check runs here: no test ever connects to a public address.
    checked = EgressGuard(EgressPolicy.build(), StaticResolver({})).check_url(url)
    assert checked.endpoint.addresses == (checked.target.host,)


def test_embedded_ipv4_is_extracted_from_every_transition_form() -> None:
    def carried(text: str) -> set[str]:
        address = parse_address(text)
        assert address.version == 6
        return {str(v4) for _, v4 in embedded_ipv4(address)}

    assert carried("2002:c000:204::1") == {"192.0.2.4"}
    assert carried("64:ff9b::c000:204") == {"192.0.2.4"}
    assert carried("2001:0:4136:e378:8000:63bf:3fff:fdd2") == {"65.54.227.120", "192.0.2.45"}
    assert carried("::a00:1") == {"10.0.0.1"}  # IPv4-compatible


def test_mapped_addresses_parse_to_their_ipv4() -> None:
    assert str(parse_address("::ffff:10.0.0.1")) == "10.0.0.1"
    assert blocked_reason(parse_address("::ffff:10.0.0.1")) is not None


def test_trusted_host_may_be_private_but_never_metadata() -> None:
    guard = EgressGuard(
        EgressPolicy.build(trusted=["169.254.169.254", "10.1.2.3"]), StaticResolver({})
    )
    assert guard.check_url("http://10.1.2.3/").endpoint.trusted
    with pytest.raises(EgressHostNotAllowedError, match="metadata"):
        guard.check_url("http://169.254.169.254/")
