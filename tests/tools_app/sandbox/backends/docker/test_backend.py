"""DockerSandbox against a real engine and real containers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tools_app.sandbox.attacks import AttackSuite
from tests.tools_app.sandbox.backends.test_namespace import NETWORK_PROBE
from tools_app.sandbox.backends.docker.backend import (
    KEEPALIVE_COMMAND,
    DockerSandbox,
    DockerSettings,
)
from tools_app.sandbox.backends.docker.lifecycle import (
    LABEL_AGENT,
    LABEL_MANAGED,
    LABEL_WORKER,
    LifecycleStrategy,
    worker_identity,
)
from tools_app.sandbox.protocol import MIB, KilledBy, Limits, MountMode, Owner

SETTINGS = DockerSettings(pids_limit=32, memory_limit_bytes=512 * MIB, grace_period_seconds=60)


def managed_ids(client) -> set[str]:
    """Managed containers this process made: a worker running elsewhere in the suite
    probes the engine with throwaway containers of its own."""
    labels = [f"{LABEL_MANAGED}=true", f"{LABEL_WORKER}={worker_identity()}"]
    # Sparse: no inspection per container, which fails for one removed in between.
    listed = client.containers.list(all=True, sparse=True, filters={"label": labels})
    return {c.id for c in listed}


class DockerAttackSuite(AttackSuite):
    settings = SETTINGS

    @pytest.fixture(autouse=True)
    def _engine(self, docker_client) -> Iterator[None]:
        self.client = docker_client
        before = managed_ids(docker_client)
        yield
        # close() in the backend fixture removed what the test made.
        assert managed_ids(docker_client) <= before

    def make_backend(self) -> DockerSandbox:
        return DockerSandbox(self.settings)

    def assert_no_leaked_resources(self) -> None:
        backend_ids = set(self._backend.lifecycle().live_containers().values())
        # This process's containers for this owner: a worker running elsewhere in the
        # suite probes the engine with throwaway containers that have no owner either.
        mine = {
            c.id
            for c in self.client.containers.list(
                all=True,
                sparse=True,
                filters={"label": [f"{LABEL_MANAGED}=true", f"{LABEL_WORKER}={worker_identity()}"]},
            )
            if (c.attrs.get("Labels") or {}).get(LABEL_AGENT)
            == (self.owner.agent_id if self.owner else "")
        }
        assert mine <= backend_ids
        assert len(backend_ids) <= 1

    @pytest.fixture
    def backend(self) -> Iterator[DockerSandbox]:
        backend = self.make_backend()
        self._backend = backend
        yield backend
        backend.close()

    # -- docker only -----------------------------------------------------

    def test_network_is_unreachable(self, backend, workspace):
        result = self.run(backend, workspace, "python3", "-c", NETWORK_PROBE)
        assert "REACHED" not in result.stdout
        assert result.stdout.count("blocked") == 3
        interfaces = self.run(backend, workspace, "cat", "/proc/net/dev")
        names = [line.split(":")[0].strip() for line in interfaces.stdout.splitlines()[2:]]
        assert names == ["lo"]

    def test_container_settings_are_locked_down(self, backend, workspace):
        result = self.run(backend, workspace, "id", "-u", mode=MountMode.READ_ONLY)
        assert result.stdout.strip() == "10001"
        attrs = self.client.containers.get(result.container_id).attrs
        host = attrs["HostConfig"]
        assert host["ReadonlyRootfs"] is True
        assert host["CapDrop"] == ["ALL"]
        assert "no-new-privileges" in host["SecurityOpt"]
        assert host["NetworkMode"] == "none"
        assert host["Memory"] == self.settings.memory_limit_bytes
        assert host["NanoCpus"] == int(self.settings.cpu_limit * 1e9)
        assert host["PidsLimit"] == self.settings.pids_limit
        tmpfs = host["Tmpfs"]["/tmp"].split(",")
        assert {"noexec", "nosuid", "nodev", f"size={self.settings.tmpfs_size_bytes}"} <= set(tmpfs)
        (mount,) = attrs["Mounts"]
        assert mount["Destination"] == "/workspace" and mount["RW"] is False
        assert attrs["Config"]["User"] == "10001:10001"
        labels = attrs["Config"]["Labels"]
        assert labels[LABEL_MANAGED] == "true"
        if self.owner is not None:
            assert labels["synthorg.agent_id"] == self.owner.agent_id
        assert attrs["Config"]["Cmd"] == KEEPALIVE_COMMAND

    def test_read_write_call_gets_a_writable_mount(self, backend, workspace):
        result = self.run(backend, workspace, "true", mode=MountMode.READ_WRITE)
        attrs = self.client.containers.get(result.container_id).attrs
        assert attrs["Mounts"][0]["RW"] is True

    def test_container_oom_kill_is_reported_as_memory(self, docker_client, workspace):
        small = DockerSandbox(DockerSettings(memory_limit_bytes=64 * MIB))
        try:
            # The rlimit is far above the container ceiling: the kernel OOM killer acts.
            limits = Limits(memory_bytes=4096 * MIB)
            script = "hog = []\nwhile True:\n    hog.append(b'x' * (4 * 1024 * 1024))\n"
            result = self.run(
                small, workspace, "python3", "-c", script, limits=limits, timeout_seconds=60
            )
            assert result.killed_by is KilledBy.MEMORY
            assert result.exit_code == 137
        finally:
            small.close()

    def test_timeout_stops_the_container(self, backend, workspace):
        first = self.run(backend, workspace, "true")
        slow = self.run(backend, workspace, "sleep", "60", timeout_seconds=1)
        assert slow.timed_out
        assert slow.container_id not in managed_ids(self.client)
        again = self.run(backend, workspace, "true")
        assert again.exit_code == 0
        if self.owner is not None:
            assert slow.container_id == first.container_id != again.container_id

    def test_log_metadata_without_raw_output(self, backend, workspace):
        result = self.run(backend, workspace, "sh", "-c", "echo secret-output; echo e >&2")
        meta = result.log_metadata
        assert meta["stdout_bytes"] == len("secret-output\n") and meta["stderr_lines"] == 1
        assert "secret-output" not in repr(dict(meta))


class TestDockerSandboxPerAgent(DockerAttackSuite):
    owner = Owner(agent_id="agent-attack", task_id="task-1")


class TestDockerSandboxPerCall(DockerAttackSuite):
    settings = DockerSettings(pids_limit=32, strategy=LifecycleStrategy.PER_CALL)
    owner = None

    # Per-call containers are gone when the call returns; their settings are
    # the same code path and are inspected in the per-agent suite.
    test_container_settings_are_locked_down = None  # type: ignore[assignment]
    test_read_write_call_gets_a_writable_mount = None  # type: ignore[assignment]

    def test_each_call_gets_a_new_container_that_is_gone_after(self, backend, workspace):
        first = self.run(backend, workspace, "hostname")
        second = self.run(backend, workspace, "hostname")
        assert first.container_id != second.container_id
        assert not {first.container_id, second.container_id} & managed_ids(self.client)


def test_closing_the_backend_returns_every_descriptor_and_container(docker_client, workspace):
    from tests.tools_app.sandbox.proc import open_fd_count
    from tools_app.sandbox.protocol import SandboxSpec, WorkspaceMount

    before = managed_ids(docker_client)  # the shared client's pool opens its connection first
    fds = open_fd_count()
    backend = DockerSandbox(SETTINGS)
    for index in range(30):
        spec = SandboxSpec(
            argv=("true",),
            workspace=WorkspaceMount(workspace),
            owner=Owner(agent_id=f"closing-{index % 3}"),
        )
        assert backend.run(spec).exit_code == 0
    assert len(backend.lifecycle().live_containers()) == 3
    backend.close()
    assert open_fd_count() <= fds
    assert managed_ids(docker_client) <= before
