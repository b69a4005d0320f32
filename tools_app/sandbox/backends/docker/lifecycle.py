"""When sandbox containers are created, reused and destroyed.

per-agent (default): one kept-alive container per agent (and workspace, mount
mode and network), destroyed a grace period after the agent is released.
per-task: one per task, destroyed when the task is released. per-call: a new
container for every call, destroyed right after it. A call with no owner the
strategy can key on runs per-call.

Reuse strategies name containers deterministically from their key, so two
workers racing to create the first container for an owner meet at the
engine: one create wins, the other gets 409 Conflict and adopts the winner.
Every container carries ``synthorg.managed=true`` and the creating worker's
identity; :func:`reclaim_orphans` removes those whose worker is gone.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools_app.sandbox.backends.docker.engine import sdk_errors
from tools_app.sandbox.logship import ContainerLogShipper
from tools_app.sandbox.protocol import Limits, MountMode, NetworkPolicy, Owner

log = logging.getLogger("synthorg.sandbox")

# How long a removal may take before the container is left to the reclaim.
REMOVE_DEADLINE_SECONDS = 10.0
REMOVE_RETRY_SECONDS = 0.05

LABEL_MANAGED = "synthorg.managed"
LABEL_AGENT = "synthorg.agent_id"
LABEL_TASK = "synthorg.task_id"
LABEL_STRATEGY = "synthorg.lifecycle"
LABEL_KEY = "synthorg.owner_key"
LABEL_WORKER = "synthorg.worker"


class LifecycleStrategy(enum.StrEnum):
    """Container reuse policy."""

    PER_AGENT = "per-agent"
    PER_TASK = "per-task"
    PER_CALL = "per-call"


@dataclass(frozen=True, slots=True)
class ContainerRequest:
    """What a call needs from its container."""

    owner: Owner | None
    workspace: Path
    mode: MountMode
    network: NetworkPolicy
    egress_dir: Path | None = None
    """The call's egress directory, bound in at creation (so such a container is the call's)."""
    limits: Limits | None = None
    """The call's limits: they size a container made for that call alone
    (``DockerSettings.limits_per_call``)."""


@dataclass(frozen=True, slots=True)
class ContainerLease:
    """A running container handed to one call."""

    container_id: str
    name: str
    key: str | None
    owner: Owner | None
    reused: bool


def worker_identity() -> str:
    """``host:pid:start-time`` of this process; a recycled pid has another start time."""
    with open("/proc/self/stat", encoding="ascii") as handle:
        start = handle.read().rsplit(")", 1)[1].split()[19]
    return f"{socket.gethostname()}:{os.getpid()}:{start}"


def _worker_alive(identity: str) -> bool:
    host, _, rest = identity.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname():
        return True  # another machine's worker: not ours to judge
    try:
        with open(f"/proc/{int(pid_text)}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19] == start
    except (OSError, ValueError, IndexError):
        return False


def reclaim_orphans(client: Any) -> list[str]:
    """Remove managed containers whose creating worker on this host is gone.

    Call when a worker starts. Containers of live workers, and of other
    hosts sharing the engine, are left alone. Returns the removed ids.
    """
    removed: list[str] = []
    # Sparse: the listing alone, not one inspection per container, which fails
    # for a container another worker removes in between.
    listed = client.containers.list(
        all=True, sparse=True, filters={"label": f"{LABEL_MANAGED}=true"}
    )
    for container in listed:
        creator = (container.attrs.get("Labels") or {}).get(LABEL_WORKER, "")
        if creator and _worker_alive(creator):
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(container.id)
    return removed


# Bounds the wait for a racing worker's container to become visible (~5 s).
ADOPT_ATTEMPTS = 60

CreateContainer = Callable[[str, ContainerRequest, dict[str, str]], Any]


class ContainerLifecycle:
    """Acquires containers for calls and tears them down per the strategy."""

    def __init__(
        self,
        client: Any,
        *,
        strategy: LifecycleStrategy,
        grace_period_seconds: float,
        create: CreateContainer,
        shipper: ContainerLogShipper | None = None,
    ) -> None:
        self.client = client
        self.strategy = strategy
        self.grace_period_seconds = grace_period_seconds
        self._create = create
        self._shipper = shipper
        self._worker = worker_identity()
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._known: dict[str, tuple[str, Owner | None]] = {}  # name -> (id, owner)
        self._timers: dict[str, threading.Timer] = {}

    def owner_key(self, request: ContainerRequest) -> str | None:
        """What containers are shared by, or None for a fresh container per call."""
        owner = request.owner
        if owner is None or self.strategy is LifecycleStrategy.PER_CALL:
            return None
        if request.egress_dir is not None:
            return None  # the proxy's socket is the call's own: so is its container
        if self.strategy is LifecycleStrategy.PER_TASK:
            if owner.task_id is None:
                return None
            return f"task:{owner.agent_id}:{owner.task_id}"
        return f"agent:{owner.agent_id}"

    def _name(self, key: str, request: ContainerRequest) -> str:
        material = f"{key}|{request.workspace}|{request.mode}|{request.network}"
        return "synthorg-" + hashlib.sha256(material.encode()).hexdigest()[:24]

    def _lock(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())

    def _labels(self, key: str | None, owner: Owner | None) -> dict[str, str]:
        return {
            LABEL_MANAGED: "true",
            LABEL_STRATEGY: str(self.strategy),
            LABEL_KEY: key or "",
            LABEL_AGENT: owner.agent_id if owner else "",
            LABEL_TASK: (owner.task_id or "") if owner else "",
            LABEL_WORKER: self._worker,
        }

    def acquire(self, request: ContainerRequest) -> ContainerLease:
        """A running container for ``request``, reused when the strategy allows."""
        key = self.owner_key(request)
        if key is None:
            name = f"synthorg-call-{uuid.uuid4().hex[:20]}"
            container = self._create(name, request, self._labels(None, request.owner))
            container.start()
            return ContainerLease(container.id, name, None, request.owner, reused=False)
        name = self._name(key, request)
        with self._lock(name):
            self._cancel_timer(name)
            known = self._known.get(name)
            if known is not None:
                return ContainerLease(known[0], name, key, request.owner, reused=True)
            container, reused = self._create_or_adopt(name, request, key)
            self._known[name] = (container.id, request.owner)
            return ContainerLease(container.id, name, key, request.owner, reused=reused)

    def _create_or_adopt(self, name: str, request: ContainerRequest, key: str) -> tuple[Any, bool]:
        errors = sdk_errors()
        reused = False
        try:
            container = self._create(name, request, self._labels(key, request.owner))
        except errors.APIError as exc:
            if exc.status_code != 409:
                raise
            # Another worker created it first: share theirs.
            container = self._adopt(name, request, key)
            reused = True
        container.reload()
        if container.status != "running":
            try:
                container.start()
            except errors.APIError:
                # A dead container under our name: replace it.
                container.remove(force=True)
                container = self._create(name, request, self._labels(key, request.owner))
                container.start()
                reused = False
        return container, reused

    def _adopt(self, name: str, request: ContainerRequest, key: str) -> Any:
        """The container another worker is creating under ``name``.

        The engine reserves the name before the container can be looked up,
        so a 409 may be followed by a moment of 404; retry briefly, and if
        the winner gave up meanwhile, create it ourselves.
        """
        errors = sdk_errors()
        for attempt in range(ADOPT_ATTEMPTS):
            try:
                return self.client.containers.get(name)
            except errors.NotFound:
                time.sleep(min(0.005 * (attempt + 1), 0.1))
        return self._create(name, request, self._labels(key, request.owner))

    def after_call(self, lease: ContainerLease) -> None:
        """A call finished normally: per-call containers go now, others stay."""
        if lease.key is None:
            self.destroy(lease, reason="per-call")

    def destroy(self, lease: ContainerLease, *, reason: str) -> None:
        """Remove the lease's container now (after a timeout, a flood, per-call)."""
        if lease.key is not None:
            with self._lock(lease.name):
                self._cancel_timer(lease.name)
                self._known.pop(lease.name, None)
        self._remove(lease.container_id, lease.owner, reason)

    def forget(self, lease: ContainerLease) -> None:
        """Drop a cached container the engine no longer runs (it will be recreated)."""
        with self._lock(lease.name):
            self._known.pop(lease.name, None)

    def _remove(self, container_id: str, owner: Owner | None, reason: str) -> None:
        errors = sdk_errors()
        try:
            container = self.client.containers.get(container_id)
        except errors.NotFound:
            return
        if self._shipper is not None:
            self._shipper.ship(
                self._shipper.teardown_event(container=container, owner=owner, reason=reason)
            )
        # A busy engine can refuse a removal for a moment, or still be busy
        # removing it ("removal in progress"); a container left behind would
        # outlive its call, so this returns once the engine no longer knows it,
        # or gives up after a bounded time (what remains then is reclaimed
        # when a worker starts).
        deadline = time.monotonic() + REMOVE_DEADLINE_SECONDS
        attempt = 0
        while True:
            refused = ""
            try:
                container.remove(force=True)
            except errors.NotFound:
                return
            except errors.APIError as exc:
                refused = str(exc)
            try:
                self.client.containers.get(container_id)
            except errors.NotFound:
                return
            attempt += 1
            if time.monotonic() >= deadline:
                log.warning(
                    "sandbox container %s still exists after %d removals: %s",
                    container_id[:12],
                    attempt,
                    refused or "the engine kept it",
                )
                return
            time.sleep(min(REMOVE_RETRY_SECONDS * attempt, 1.0))

    def release(self, owner: Owner) -> None:
        """The owner's task ended (or the agent stopped).

        per-task: that task's containers go now. per-agent: the agent's
        containers go after the grace period unless a call reuses them first.
        """
        with self._guard:
            names = [
                name
                for name, (_, held_for) in self._known.items()
                if held_for is not None
                and held_for.agent_id == owner.agent_id
                and (
                    self.strategy is LifecycleStrategy.PER_AGENT
                    or held_for.task_id == owner.task_id
                )
            ]
        for name in names:
            if self.strategy is LifecycleStrategy.PER_TASK:
                self._expire(name, "task released")
            else:
                self._schedule_expiry(name)

    def _schedule_expiry(self, name: str) -> None:
        with self._lock(name):
            self._cancel_timer(name)
            timer = threading.Timer(
                self.grace_period_seconds, self._expire_quietly, (name, "grace expired")
            )
            timer.daemon = True
            self._timers[name] = timer
            timer.start()

    def _cancel_timer(self, name: str) -> None:
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()

    def _expire_quietly(self, name: str, reason: str) -> None:
        """``_expire`` from a timer thread: a failure is logged, never lost silently
        (the container is then reclaimed when a worker starts)."""
        try:
            self._expire(name, reason)
        except Exception:
            log.exception("sandbox container %s could not be removed (%s)", name, reason)

    def _expire(self, name: str, reason: str) -> None:
        with self._lock(name):
            self._timers.pop(name, None)
            known = self._known.pop(name, None)
        if known is not None:
            self._remove(known[0], known[1], reason)

    def live_containers(self) -> dict[str, str]:
        """Container name -> id of what this lifecycle keeps alive now."""
        with self._guard:
            return {name: cid for name, (cid, _) in self._known.items()}

    def cleanup_all(self) -> None:
        """Destroy every container this lifecycle holds (worker shutdown)."""
        for name in list(self.live_containers()):
            self._expire(name, "cleanup")
