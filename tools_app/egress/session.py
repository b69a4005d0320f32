"""One call's egress: a private directory holding the proxy's socket and the forwarder.

``egress_session`` makes the directory (world-searchable, random name, so only
the sandbox it is bound into finds it), copies the forwarder in, starts an
``EgressProxy`` for the call's decider, and on exit stops it and hands every
connection record to ``on_records`` (which writes the audit rows) in the
caller's thread. ``egress_serving`` is the same for a holder that outlives one call
(a warm MCP server): it drains the records as it goes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tools_app.egress.decision import EgressDecider
from tools_app.egress.limits import ProxyLimits
from tools_app.egress.mount import FORWARDER_NAME, FORWARDER_SOURCE, SOCKET_NAME, TRUST_BUNDLE
from tools_app.egress.records import ConnectionRecord
from tools_app.egress.seal import Seal
from tools_app.egress.server import EgressProxy

if TYPE_CHECKING:
    import ssl

    from tools_app.egress.authority import EgressAuthority

RecordsSink = Callable[[list[ConnectionRecord], int], None]
"""Receives the records and how many connections were refused without one."""


@dataclass(frozen=True, slots=True)
class EgressPort:
    """The host directory a sandbox binds at ``inside.MOUNT_POINT``."""

    directory: Path

    @property
    def socket_path(self) -> Path:
        """The proxy's unix socket on the host."""
        return self.directory / SOCKET_NAME


@contextlib.contextmanager
def egress_serving(
    decider: EgressDecider,
    *,
    limits: ProxyLimits | None = None,
    root: Path | None = None,
    max_records: int = 1000,
    seals: tuple[Seal, ...] = (),
    authority: EgressAuthority | None = None,
    upstream_tls: ssl.SSLContext | None = None,
) -> Iterator[tuple[EgressPort, EgressProxy]]:
    """The directory and the running proxy, for a holder that takes the records itself
    (``EgressProxy.drain`` while it serves, ``stop`` at the end); removed on exit.

    With ``seals`` and an ``authority``, the directory also holds the trust bundle
    (``mount.TRUST_BUNDLE``) the sandbox's TLS clients are pointed at."""
    directory = Path(tempfile.mkdtemp(prefix="synthorg-egress-", dir=root))
    try:
        os.chmod(directory, 0o755)  # noqa: S103 - the sandbox user binds and enters it
        forwarder = directory / FORWARDER_NAME
        shutil.copyfile(FORWARDER_SOURCE, forwarder)
        os.chmod(forwarder, 0o644)
        if seals and authority is not None:
            bundle = directory / TRUST_BUNDLE
            bundle.write_bytes(authority.trust_bundle())
            os.chmod(bundle, 0o644)
        port = EgressPort(directory)
        proxy = EgressProxy(
            decider, socket_path=port.socket_path, limits=limits, max_records=max_records,
            seals=seals, authority=authority, upstream_tls=upstream_tls,
        )  # fmt: skip
        proxy.start()
        try:
            yield port, proxy
        finally:
            proxy.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def egress_session(
    decider: EgressDecider,
    *,
    limits: ProxyLimits | None = None,
    on_records: RecordsSink | None = None,
    root: Path | None = None,
    max_records: int = 1000,
    seals: tuple[Seal, ...] = (),
    authority: EgressAuthority | None = None,
    upstream_tls: ssl.SSLContext | None = None,
) -> Iterator[EgressPort]:
    """Serve one call's sandbox for the duration of the ``with`` block."""
    with egress_serving(
        decider, limits=limits, root=root, max_records=max_records,
        seals=seals, authority=authority, upstream_tls=upstream_tls,
    ) as (port, proxy):  # fmt: skip
        try:
            yield port
        finally:
            records = proxy.stop()
            if on_records is not None:
                on_records(records, proxy.unrecorded)
