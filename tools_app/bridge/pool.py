"""The warm servers of one worker process (a call through them: ``bridge.upstream_call``).

A daemon thread runs an event loop holding the sessions: one per server (``state:
worker``) or one per server and agent (``state: agent``, or a server given the agent's
workspace). At most ``SYNTHORG_BRIDGE_POOL_SIZE`` are kept: the least recently used idle
one makes room. A session that fails its ping before a call (for a pinned call: its
listing) is dropped and started again (a server that died is restarted); one idle for
``SYNTHORG_BRIDGE_IDLE_SECONDS`` is stopped. Each session's listing is reviewed against
the pins when it opens (a restart included), before any call uses it; before each call
the server is listed again (the call that started it uses the listing its start
reviewed), and a call whose tool it no longer lists with the pinned definition is not
sent (the new listing is recorded, so the change is held). ``notifications/tools/list_changed``
lists the server again and records it.

A server whose entry names ``network`` gets its egress proxy (``bridge.egress``) before it
starts and loses it after it stops; the call's task drains the proxy's records after each
call (``egress_records``), and what is left is audited when the server stops. A server
naming ``secrets`` is started with the values its call brought (``bridge.credentials``);
a warm server whose values differ (a rotated secret) is replaced: new calls get a server
started with the new values, and the old one is stopped once its calls in flight end.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import hashlib
import json
import os
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from django.conf import settings
from django.db import close_old_connections, connection
from mcp.client.session import ClientSession

from common.config.mcp import McpServer
from common.settings_config import synthorg_config
from tools_app.bridge.connect import list_upstream_tools, open_session
from tools_app.bridge.credentials import ServerSecrets
from tools_app.bridge.definitions import UpstreamTool
from tools_app.bridge.egress import ServerEgress, has_proxy, write_server_records
from tools_app.bridge.launch import Launch, per_agent
from tools_app.bridge.stderr import StderrTail
from tools_app.builtin.base import (
    ToolFailedError,
)
from tools_app.egress.records import ConnectionRecord
from tools_app.sandbox.errors import SandboxError

log = structlog.get_logger("synthorg.bridge")

PoolKey = tuple[str, str | None]


class ServerEndedError(Exception):
    """A warm stdio server ended while nobody had asked it to stop."""


@dataclass
class WarmServer:
    """One running session and the task that owns it."""

    key: PoolKey
    server: McpServer
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    session: ClientSession | None = None
    error: BaseException | None = None
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    task: asyncio.Task[None] | None = None
    egress: ServerEgress | None = None
    secrets_digest: str = ""
    retiring: bool = False  # replaced (a rotated secret): stopped when its last call ends
    # What the server listed as its session opened (reviewed against the pins then).
    start_listing: list[UpstreamTool] | None = None
    launch: Launch | None = None  # a stdio server's command line, ceilings and group

    def launched(self, launch: Launch) -> None:
        self.launch = launch

    def out_of_memory(self) -> str | None:
        """Why the server stopped, when its memory ceiling stopped it."""
        if self.launch is None or not self.launch.out_of_memory():
            return None
        mib = (self.launch.memory_bytes or 0) / 1024**2
        return (
            f"the MCP server {self.server.name} was stopped: it went over its memory "
            f"ceiling of {mib:g} MiB (mcp_servers[].memory_limit)"
        )

    @property
    def alive(self) -> bool:
        return self.session is not None and self.task is not None and not self.task.done()


class BridgePool:
    """The warm servers of this process (build it with ``bridge_pool()``)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.servers: dict[PoolKey, WarmServer] = {}
        self._lock: asyncio.Lock | None = None
        self._key_locks: weakref.WeakValueDictionary[PoolKey, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self.thread = threading.Thread(target=self._run, name="synthorg-mcp-bridge", daemon=True)
        self.thread.start()
        self.submit(self._reap_idle())

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    @property
    def lock(self) -> asyncio.Lock:
        """Held while the servers' slots are counted and one is taken."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def _key_lock(self, key: PoolKey) -> asyncio.Lock:
        """Held while one key's server is checked, or stopped and started again; kept
        only while a call holds or waits for it."""
        lock = self._key_locks.get(key)
        if lock is None:
            lock = self._key_locks[key] = asyncio.Lock()
        return lock

    async def _own(self, warm: WarmServer, workspace: Path | None, secrets: ServerSecrets) -> None:
        """The task that holds the session open until told to stop (or it fails)."""
        loop = asyncio.get_running_loop()
        # A stdio server's standard error closes when its process ends: the session
        # itself would only notice at the next request.
        ended = asyncio.Event()
        stderr = (
            StderrTail(on_end=functools.partial(loop.call_soon_threadsafe, ended.set))
            if warm.server.transport == "stdio"
            else None
        )
        try:
            if has_proxy(warm.server):
                warm.egress = await loop.run_in_executor(
                    None, ServerEgress, warm.server, secrets.sealed
                )
            async with open_session(
                warm.server,
                workspace=workspace,
                sandboxing=synthorg_config().sandboxing,
                on_list_changed=lambda: self._list_changed(warm),
                stderr=stderr,
                egress_dir=warm.egress.directory if warm.egress is not None else None,
                secret_env=secrets.env,
                secret_values=secrets.values,
                on_launch=warm.launched,
            ) as session:
                warm.session = session
                # Checked against the pins before any call uses it: what this start of
                # the server lists is reviewed (a changed definition is held now).
                await self._review_listing(warm, session)
                warm.ready.set()
                await _either(warm.stop, ended)
                if not warm.stop.is_set():
                    raise ServerEndedError(warm.out_of_memory() or "its process ended on its own")
        except BaseException as exc:
            warm.error = exc
            if stderr is not None and isinstance(exc, Exception):
                # The server failed to start or died: its last words go to the log.
                said = await loop.run_in_executor(None, _stderr_text, stderr)
                log.warning(
                    "bridge_server_failed", server=warm.server.name, error=describe_error(exc),
                    stderr=said,
                )  # fmt: skip
        finally:
            warm.session = None
            if warm.egress is not None:
                await loop.run_in_executor(None, _close_egress, warm)
            warm.ready.set()

    async def _review_listing(self, warm: WarmServer, session: ClientSession) -> None:
        """List a session that just opened and record it; a failure fails the start."""
        from tools_app.bridge.discovery import record_session_listing

        tools = await list_upstream_tools(session, warm.server.name)
        await asyncio.get_running_loop().run_in_executor(
            None, record_session_listing, warm.server, tools
        )
        warm.start_listing = tools

    async def _check_pin(
        self, warm: WarmServer, tool: str, pinned_hash: str, tools: list[UpstreamTool]
    ) -> None:
        """Refuse the call unless the server's listing ``tools`` (taken just now) has
        ``tool`` with its pinned definition.

        A listing that differs is recorded (the change is held, audited) before the
        refusal, so the next listing agents get no longer shows the tool.
        """
        from tools_app.bridge.discovery import refusal_at_call

        listed = next((t for t in tools if t.name == tool), None)
        if listed is not None and listed.definition_hash() == pinned_hash:
            return
        refusal = await asyncio.get_running_loop().run_in_executor(
            None, refusal_at_call, warm.server, tools, tool
        )
        log.warning("bridge_call_refused_unpinned", server=warm.server.name, tool=tool)
        raise ToolFailedError(refusal.reason, code=refusal.code)

    async def _list_changed(self, warm: WarmServer) -> None:
        session = warm.session
        if session is None:
            return
        try:
            tools = await list_upstream_tools(session, warm.server.name)
        except Exception as exc:
            log.warning("bridge_relist_failed", server=warm.server.name, error=str(exc))
            return
        from tools_app.bridge.discovery import record_listing

        await asyncio.get_running_loop().run_in_executor(None, record_listing, warm.server, tools)

    async def _stop(self, warm: WarmServer) -> None:
        if self.servers.get(warm.key) is warm:
            del self.servers[warm.key]
        warm.stop.set()
        if warm.task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(
                    asyncio.shield(warm.task), settings.SYNTHORG_BRIDGE_START_SECONDS
                )

    async def _make_room(self) -> None:
        while len(self.servers) >= settings.SYNTHORG_BRIDGE_POOL_SIZE:
            # Not one still starting: the call that starts it is waiting for it.
            idle = [w for w in self.servers.values() if w.busy == 0 and w.ready.is_set()]
            if not idle:
                raise ToolFailedError(
                    f"every one of this worker's {settings.SYNTHORG_BRIDGE_POOL_SIZE} MCP server "
                    "slots is busy; call again shortly",
                    code="bridge_busy",
                )
            await self._stop(min(idle, key=lambda w: w.last_used))

    async def warm(
        self, server: McpServer, key: PoolKey, workspace: Path | None,
        secrets: ServerSecrets | None = None, *, ping: bool = True,
    ) -> tuple[WarmServer, bool]:  # fmt: skip
        """A live session for ``key`` and whether this call started it: the warm one
        (pinged, unless ``ping`` is False: the caller's next request tells), else a new
        one."""
        secrets = secrets or ServerSecrets()
        digest = _digest(secrets.digest_source)
        # One key's start (seconds, a slow server's minutes) holds that key only: calls
        # to the other servers of this worker go on meanwhile.
        async with self._key_lock(key):
            warm = self.servers.get(key)
            if warm is not None and warm.secrets_digest != digest:
                log.info("bridge_server_secrets_changed", server=server.name, busy=warm.busy)
                if warm.busy > 0:
                    # Its calls in flight finish with the values they started with.
                    warm.retiring = True
                    del self.servers[key]
                    warm = None
            elif warm is not None and warm.alive and warm.session is not None:
                # Counted at once: another key's start does not take its slot meanwhile.
                warm.busy += 1
                if not ping:
                    return warm, False
                try:
                    await asyncio.wait_for(warm.session.send_ping(), server.timeout_seconds)
                    return warm, False
                except BaseException as exc:
                    warm.busy -= 1  # also when the call is cancelled during its ping
                    if not isinstance(exc, Exception):
                        raise
                    log.info("bridge_server_restarted", server=server.name, error=str(exc))
            if warm is not None:
                await self._stop(warm)
            warm = WarmServer(key=key, server=server, secrets_digest=digest)
            async with self.lock:  # the slots are counted across keys
                await self._make_room()
                self.servers[key] = warm
            warm.task = asyncio.ensure_future(self._own(warm, workspace, secrets))
            try:
                await asyncio.wait_for(warm.ready.wait(), settings.SYNTHORG_BRIDGE_START_SECONDS)
            except TimeoutError:
                await self._stop(warm)
                raise ToolFailedError(
                    f"the MCP server {server.name} did not start within "
                    f"{settings.SYNTHORG_BRIDGE_START_SECONDS:g} s",
                    code="upstream_unavailable",
                ) from None
            if warm.session is None:
                if self.servers.get(key) is warm:
                    del self.servers[key]
                raise _start_failure(server, warm.error)
            warm.busy += 1
            return warm, True

    async def call(
        self, server: McpServer, key: PoolKey, workspace: Path | None, tool: str,
        arguments: dict[str, Any], sent: threading.Event | None = None,
        secrets: ServerSecrets | None = None, pinned_hash: str | None = None,
    ) -> Any:  # fmt: skip
        """Call ``tool``; with ``pinned_hash``, only once the server lists that definition.

        A pinned call's listing doubles as the warm session's liveness check: a session
        that cannot list is dropped and the server started once more (its start reviews
        a fresh listing, which the call then uses)."""
        pinned = pinned_hash is not None
        for last_try in (False, True):
            warm, started = await self.warm(server, key, workspace, secrets, ping=not pinned)
            if sent is not None:
                sent.set()  # the tool's timeout runs from here; starting has its own limit
            try:
                assert warm.session is not None
                if pinned_hash is not None:
                    fresh = warm.start_listing if started else None
                    warm.start_listing = None
                    try:
                        tools = (
                            fresh
                            if fresh is not None
                            else await asyncio.wait_for(
                                list_upstream_tools(warm.session, server.name),
                                server.timeout_seconds,
                            )
                        )
                    except Exception as exc:
                        if last_try or started:
                            raise
                        log.info("bridge_server_restarted", server=server.name, error=str(exc))
                        await self._stop(warm)
                        continue
                    await self._check_pin(warm, tool, pinned_hash, tools)
                try:
                    return await warm.session.call_tool(tool, arguments)
                except Exception as exc:
                    stopped = warm.out_of_memory()
                    if stopped is None:
                        raise
                    log.warning("bridge_server_out_of_memory", server=server.name)
                    raise ToolFailedError(stopped, code="upstream_error") from exc
            finally:
                warm.busy -= 1
                warm.last_used = time.monotonic()
                if warm.retiring and warm.busy == 0:
                    await self._stop(warm)
        raise AssertionError("unreachable: the last try returns or raises")

    def egress_records(self, key: PoolKey) -> tuple[list[ConnectionRecord], int]:
        """Drain the records of ``key``'s proxy (any thread); nothing when it has none."""
        warm = self.servers.get(key)
        if warm is None or warm.egress is None:
            return [], 0
        return warm.egress.drain()

    async def _reap_idle(self) -> None:
        while True:
            await asyncio.sleep(max(1.0, settings.SYNTHORG_BRIDGE_IDLE_SECONDS / 4))
            await self.reap()

    async def reap(self) -> None:
        """One pass: stop the servers idle too long and those whose session has ended.

        A server still starting has no session yet and no call counted on it (the call
        that started it waits for it): it is left to its start's own time limit."""
        now = time.monotonic()
        for warm in list(self.servers.values()):
            if not warm.ready.is_set():
                continue
            idle = now - warm.last_used > settings.SYNTHORG_BRIDGE_IDLE_SECONDS
            if (warm.busy == 0 and idle) or not warm.alive:
                log.info("bridge_server_stopped", server=warm.server.name, idle=idle)
                await self._stop(warm)


async def _either(first: asyncio.Event, second: asyncio.Event) -> None:
    """Until one of the events is set."""
    waits = [asyncio.ensure_future(first.wait()), asyncio.ensure_future(second.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def _stderr_text(stderr: StderrTail) -> str:
    from tools_app.secrets import known_secrets_now

    return stderr.text(known_secrets=known_secrets_now())


def _digest(secret_env: Mapping[str, str]) -> str:
    """Which values a server was started with, without keeping them."""
    canonical = json.dumps(sorted(secret_env.items())).encode()
    return hashlib.sha256(canonical).hexdigest() if secret_env else ""


def _close_egress(warm: WarmServer) -> None:
    """Stop ``warm``'s proxy and audit what no call drained (the pool's executor)."""
    assert warm.egress is not None
    egress, warm.egress = warm.egress, None
    records, unrecorded = egress.close()
    if not records and not unrecorded:
        return
    close_old_connections()
    try:
        write_server_records(
            server=warm.server.name, agent_id=warm.key[1], invocation_id=None, tool="",
            records=records, unrecorded=unrecorded,
        )  # fmt: skip
    except Exception:
        log.exception("bridge_egress_audit_failed", server=warm.server.name)
    finally:
        connection.close()  # an executor thread: no connection left open behind it


def _start_failure(server: McpServer, error: BaseException | None) -> Exception:
    if isinstance(error, SandboxError):
        reason = getattr(error, "reason", str(error))
        return ToolFailedError(
            f"the {server.backend} sandbox cannot start the MCP server {server.name}: {reason}",
            code="sandbox_unavailable",
        )
    detail = describe_error(error)
    return ToolFailedError(
        f"the MCP server {server.name} could not be started or did not answer: {detail}",
        code="upstream_unavailable",
    )


def describe_error(error: BaseException | None) -> str:
    if error is None:
        return "no reason given"
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{error.__class__.__name__}: {error}"[:500]


_pools: dict[int, BridgePool] = {}
_pools_lock = threading.Lock()


def bridge_pool() -> BridgePool:
    """This process's pool (a forked child builds its own)."""
    with _pools_lock:
        pool = _pools.get(os.getpid())
        if pool is None:
            pool = _pools[os.getpid()] = BridgePool()
        return pool


def pool_key(server: McpServer, agent_id: str) -> PoolKey:
    """Per agent when the server holds state or works in the agent's workspace."""
    return (server.name, agent_id if per_agent(server) else None)
