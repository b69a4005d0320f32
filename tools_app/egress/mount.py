"""PURE: how the egress proxy appears inside a sandbox (shared by every isolating backend).

The call's egress directory (the proxy's unix socket and the forwarder) is bound
read-only at ``MOUNT_POINT``; the command runs under the forwarder, which listens
on the sandbox's own ``127.0.0.1:FORWARD_PORT``; the standard proxy variables
point there, so curl, git, pip and Python's urllib use it without being told.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

MOUNT_POINT: Final = "/run/synthorg-egress"
SOCKET_NAME: Final = "proxy.sock"
FORWARDER_NAME: Final = "forward.py"
FORWARDER_SOURCE: Final = Path(__file__).parent / "inside" / "forwarder.py"
"""The forwarder's source: copied into each call's egress directory, and the relay the
spawn server runs for a namespace sandbox (``tools_app/sandbox/spawn/inside/loopback.py``)."""
FORWARD_PORT: Final = 3128
PYTHON_INSIDE: Final = "/usr/bin/python3"
TRUST_BUNDLE: Final = "ca-bundle.pem"
"""In a call with sealed secrets: the system's roots plus the console's egress authority."""
# Where common TLS clients look for their roots (OpenSSL and Python, requests, curl, git,
# Node's extra roots, pip).
TRUST_VARIABLES: Final = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
)


def proxy_env(port: int = FORWARD_PORT, *, trust_bundle: bool = False) -> dict[str, str]:
    """The proxy variables, in both spellings (curl reads only lower-case http_proxy).

    ``socks5h`` makes SOCKS clients send names, so the proxy's resolver is the only one.
    With ``trust_bundle`` (a call with sealed secrets), TLS clients are pointed at the
    bundle in the egress directory, which adds the console's authority to the roots.
    """
    http = f"http://127.0.0.1:{port}"
    socks = f"socks5h://127.0.0.1:{port}"
    env: dict[str, str] = {}
    for name, value in (("http_proxy", http), ("https_proxy", http), ("all_proxy", socks)):
        env[name] = value
        env[name.upper()] = value
    # Nothing bypasses the proxy: the sandbox's own loopback serves no one else.
    env["no_proxy"] = env["NO_PROXY"] = ""
    if trust_bundle:
        for name in TRUST_VARIABLES:
            env[name] = f"{MOUNT_POINT}/{TRUST_BUNDLE}"
    return env


def forwarded_argv(argv: tuple[str, ...], port: int = FORWARD_PORT) -> tuple[str, ...]:
    """``argv`` run under the forwarder."""
    return (
        PYTHON_INSIDE,
        "-I",
        "-S",
        f"{MOUNT_POINT}/{FORWARDER_NAME}",
        f"{MOUNT_POINT}/{SOCKET_NAME}",
        str(port),
        "--",
        *argv,
    )


def ssh_proxy_command() -> str:
    """ssh's ProxyCommand: one tunnel through the proxy (ssh fills in %h and %p)."""
    return (
        f"{PYTHON_INSIDE} -I -S {MOUNT_POINT}/{FORWARDER_NAME} --connect "
        f"{MOUNT_POINT}/{SOCKET_NAME} %h %p"
    )


def sealed_call(egress_dir: Path | None) -> bool:
    """Whether the call's egress directory holds the trust bundle (it has sealed secrets)."""
    return egress_dir is not None and (egress_dir / TRUST_BUNDLE).is_file()
