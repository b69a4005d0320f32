"""Lifecycle strategies with real containers: reuse, teardown, races, orphans."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tests.tools_app.sandbox.backends.docker.test_backend import managed_ids
from tools_app.sandbox.backends.docker.backend import DockerSandbox, DockerSettings
from tools_app.sandbox.backends.docker.lifecycle import (
    LABEL_KEY,
    LABEL_MANAGED,
    LABEL_WORKER,
    ContainerRequest,
    LifecycleStrategy,
    reclaim_orphans,
    worker_identity,
)
from tools_app.sandbox.protocol import MountMode, NetworkPolicy, Owner, SandboxSpec, WorkspaceMount


def sandbox(strategy: LifecycleStrategy, grace: float = 30.0) -> DockerSandbox:
    return DockerSandbox(DockerSettings(strategy=strategy, grace_period_seconds=grace))


def call(backend: DockerSandbox, workspace, owner: Owner | None, *argv: str):
    argv = argv or ("hostname",)
    return backend.run(SandboxSpec(argv=argv, workspace=WorkspaceMount(workspace), owner=owner))


def wait_until_gone(client, container_id: str, seconds: float = 30.0) -> bool:
    """Poll for a container's removal (a bounded wait, not a timing assertion)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if container_id not in managed_ids(client):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def cleanup(docker_client) -> Iterator[list[DockerSandbox]]:
    made: list[DockerSandbox] = []
    yield made
    for backend in made:
        backend.close()


def test_per_agent_reuses_one_container_across_tasks_until_grace_expires(
    docker_client, workspace, cleanup
):
    backend = sandbox(LifecycleStrategy.PER_AGENT, grace=0.5)
    cleanup.append(backend)
    first = call(backend, workspace, Owner("agent-a", "task-1"))
    second = call(backend, workspace, Owner("agent-a", "task-2"))
    other = call(backend, workspace, Owner("agent-b", "task-1"))
    assert first.container_id == second.container_id != other.container_id
    assert first.stdout == second.stdout  # same hostname, same container
    backend.release(Owner("agent-a", "task-2"))
    assert wait_until_gone(docker_client, first.container_id)
    assert other.container_id in managed_ids(docker_client)


def test_per_agent_reacquire_within_grace_keeps_the_warm_container(
    docker_client, workspace, cleanup
):
    backend = sandbox(LifecycleStrategy.PER_AGENT, grace=30)
    cleanup.append(backend)
    first = call(backend, workspace, Owner("agent-w", "t1"))
    backend.release(Owner("agent-w", "t1"))
    again = call(backend, workspace, Owner("agent-w", "t2"))
    assert again.container_id == first.container_id
    assert first.container_id in managed_ids(docker_client)


def test_per_task_shares_within_a_task_and_destroys_on_release(docker_client, workspace, cleanup):
    backend = sandbox(LifecycleStrategy.PER_TASK)
    cleanup.append(backend)
    a1 = call(backend, workspace, Owner("agent-t", "task-1"))
    a2 = call(backend, workspace, Owner("agent-t", "task-1"))
    b1 = call(backend, workspace, Owner("agent-t", "task-2"))
    assert a1.container_id == a2.container_id != b1.container_id
    backend.release(Owner("agent-t", "task-1"))
    assert a1.container_id not in managed_ids(docker_client)
    assert b1.container_id in managed_ids(docker_client)


def test_per_task_without_a_task_runs_per_call(docker_client, workspace, cleanup):
    backend = sandbox(LifecycleStrategy.PER_TASK)
    cleanup.append(backend)
    result = call(backend, workspace, Owner("agent-t", None))
    assert result.container_id not in managed_ids(docker_client)


def test_per_call_destroys_each_container_after_its_call(docker_client, workspace, cleanup):
    backend = sandbox(LifecycleStrategy.PER_CALL)
    cleanup.append(backend)
    first = call(backend, workspace, Owner("agent-c", "t"))
    second = call(backend, workspace, Owner("agent-c", "t"))
    assert first.container_id != second.container_id
    assert not {first.container_id, second.container_id} & managed_ids(docker_client)


def test_two_workers_racing_for_an_owners_first_container_share_one(
    docker_client, workspace, cleanup
):
    # Two backends stand for two worker processes: separate locks, one engine.
    workers = [sandbox(LifecycleStrategy.PER_AGENT) for _ in range(2)]
    cleanup.extend(workers)
    for worker in workers:
        worker.lifecycle()
    owner = Owner("agent-race", "task-race")
    barrier = threading.Barrier(len(workers))
    results: list[object] = [None] * len(workers)

    def acquire(index: int) -> None:
        barrier.wait()
        results[index] = call(workers[index], workspace, owner)

    threads = [threading.Thread(target=acquire, args=(i,)) for i in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = {r.container_id for r in results}  # type: ignore[attr-defined]
    assert len(ids) == 1
    assert all(r.exit_code == 0 for r in results)  # type: ignore[attr-defined]
    key = (
        workers[0]
        .lifecycle()
        .owner_key(ContainerRequest(owner, workspace, MountMode.READ_ONLY, NetworkPolicy.NONE))
    )
    survivors = docker_client.containers.list(
        all=True, sparse=True, filters={"label": f"{LABEL_KEY}={key}"}
    )
    assert [c.id for c in survivors] == list(ids)


def test_threads_of_one_worker_racing_share_one_container(docker_client, workspace, cleanup):
    backend = sandbox(LifecycleStrategy.PER_AGENT)
    cleanup.append(backend)
    owner = Owner("agent-threads", "t")
    barrier = threading.Barrier(4)
    ids: list[str | None] = []

    def run() -> None:
        barrier.wait()
        ids.append(call(backend, workspace, owner).container_id)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 1


def test_orphans_of_a_dead_worker_are_reclaimed_and_live_ones_kept(docker_client, workspace):
    image = DockerSettings().image
    host, pid, start = worker_identity().split(":")
    dead = f"{host}:999999999:{start}"
    orphan = docker_client.containers.create(
        image, labels={LABEL_MANAGED: "true", LABEL_WORKER: dead}, network_mode="none"
    )
    mine = docker_client.containers.create(
        image, labels={LABEL_MANAGED: "true", LABEL_WORKER: worker_identity()}, network_mode="none"
    )
    recycled = docker_client.containers.create(
        image,
        labels={LABEL_MANAGED: "true", LABEL_WORKER: f"{host}:{pid}:0"},
        network_mode="none",
    )
    unmanaged = docker_client.containers.create(image, network_mode="none")
    try:
        removed = set(reclaim_orphans(docker_client))
        assert {orphan.id, recycled.id} <= removed
        assert mine.id not in removed and unmanaged.id not in removed
        remaining = {c.id for c in docker_client.containers.list(all=True, sparse=True)}
        assert mine.id in remaining and unmanaged.id in remaining
        assert orphan.id not in remaining
    finally:
        for container in (mine, unmanaged, orphan, recycled):
            try:
                container.remove(force=True)
            except Exception:  # already reclaimed
                continue


def test_a_container_removed_behind_the_backends_back_is_replaced(
    docker_client, workspace, cleanup
):
    backend = sandbox(LifecycleStrategy.PER_AGENT)
    cleanup.append(backend)
    owner = Owner("agent-gone", "t")
    first = call(backend, workspace, owner)
    docker_client.containers.get(first.container_id).remove(force=True)
    second = call(backend, workspace, owner)
    assert second.exit_code == 0 and second.container_id != first.container_id


def test_raw_logs_are_shipped_only_when_switched_on(docker_client, workspace):
    events: list[Mapping[str, Any]] = []
    for raw in (False, True):
        backend = DockerSandbox(
            DockerSettings(strategy=LifecycleStrategy.PER_CALL, ship_raw_logs=raw),
            log_sink=events.append,
        )
        try:
            call(backend, workspace, None, "sh", "-c", "echo payload-text")
        finally:
            backend.close()
    execs = [e for e in events if e["event"] == "sandbox.container.exec"]
    teardowns = [e for e in events if e["event"] == "sandbox.container.teardown"]
    assert len(execs) == 2 and len(teardowns) == 2
    assert "payload-text" not in repr(execs[0]) and execs[0]["stdout_bytes"] == 13
    assert execs[1]["stdout"] == "payload-text\n"
    assert all(e["container_id"] for e in events)


def test_a_failing_log_sink_never_fails_the_call(docker_client, workspace):
    def broken(event: object) -> None:
        raise RuntimeError("sink down")

    backend = DockerSandbox(DockerSettings(strategy=LifecycleStrategy.PER_CALL), log_sink=broken)
    try:
        assert call(backend, workspace, None, "true").exit_code == 0
    finally:
        backend.close()


def test_lifecycle_strategy_names_match_the_config():
    from common.config.sandbox import LifecycleConfig

    assert [s.value for s in LifecycleStrategy] == ["per-agent", "per-task", "per-call"]
    assert LifecycleConfig().strategy == LifecycleStrategy.PER_AGENT.value
    assert LifecycleConfig().grace_period_seconds == 30
