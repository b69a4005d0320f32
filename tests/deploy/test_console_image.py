"""The console's image, built here without a registry, runs a real call end to end.

Its web and worker containers run on the private engine (no bridge: host network,
loopback only) against this session's PostgreSQL and a Redis database of their own,
so the session's worker never takes their tasks: an agent's call submitted to the
web container is run by the worker container's sandbox and answered with the result.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import yaml
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from common.testing import free_port, http_status, wait_until
from synthorg_site.console_image.build import SOURCE_LABEL, build_console_image
from tests.support.pipeline import own_redis
from tests.tools_app.sandbox.conftest import docker_engine
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.docker, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
METRICS_VOLUME = "synthorg-metrics"
REDIS_DB = 14
CONSOLE_UID = 10002
MANAGED = {"synthorg.managed": "true"}
# What docker/compose.yaml gives its workers: the sandboxes make their own namespaces.
WORKER_CAPABILITIES = ["SYS_ADMIN"]
WORKER_SECURITY_OPT = ["seccomp=unconfined", "apparmor=unconfined"]


def metrics_volume(client: Any) -> Any:
    """The metrics directory docker/compose.yaml shares between its console containers:
    a tmpfs volume with the file's own options."""
    compose = yaml.safe_load((DOCKER_DIR / "compose.yaml").read_text())
    options = compose["volumes"][METRICS_VOLUME]["driver_opts"]
    return client.volumes.create(driver="local", driver_opts=options, labels=MANAGED)


def _container(
    client: Any,
    image: str,
    command: list[str],
    *,
    environment: dict[str, str],
    binds: list[str],
    sandboxes: bool = False,
    network_mode: str = "host",
    var_dir: str | None = None,
    metrics: str | None = None,
) -> Any:
    """A console container as docker/compose.yaml runs it: as root (web nodes and
    sandbox workers), on the host's network; a sandbox worker also gets SYS_ADMIN, no
    seccomp or AppArmor profile and /proc unmasked (``systempaths=unconfined``, which
    the engine's API spells as empty MaskedPaths and ReadonlyPaths) so the sandboxes
    can make their own namespaces and mount their own /proc. Its metrics directory is
    the volume ``metrics`` (shared, as compose does), else a tmpfs of its own."""
    options: dict[str, Any] = {
        "network_mode": network_mode,
        "binds": {p: {"bind": p, "mode": "rw"} for p in binds},
    }
    # The session's var/metrics is the session's own processes'.
    if var_dir and metrics:
        options["binds"][metrics] = {"bind": f"{var_dir}/metrics", "mode": "rw"}
    elif var_dir:
        options["tmpfs"] = {f"{var_dir}/metrics": "mode=0700"}
    if sandboxes:
        options.update(cap_add=WORKER_CAPABILITIES, security_opt=WORKER_SECURITY_OPT)
    host_config = client.api.create_host_config(**options)
    if sandboxes:
        host_config["MaskedPaths"] = []
        host_config["ReadonlyPaths"] = []
    created = client.api.create_container(
        image, command, user="root", environment=environment, labels=MANAGED,
        host_config=host_config,
    )  # fmt: skip
    container = client.containers.get(created["Id"])
    container.start()
    return container


@pytest.fixture(scope="module")
def console_image() -> Iterator[tuple[Any, str]]:
    """The image built from this source tree (reused when its source label matches)."""
    client = docker_engine()
    started = time.monotonic()
    report = build_console_image(client=client, log=print)
    print(f"console image {report.method} in {time.monotonic() - started:.1f} s")
    yield client, report.image
    client.close()


def _redis_socket(url: str) -> str:
    assert url.startswith("unix://"), "the test session's Redis listens on a unix socket"
    return url.removeprefix("unix://").split("?", 1)[0]


@pytest.fixture(scope="module")
def console(console_image: tuple[Any, str], test_env: dict[str, str]) -> Iterator[dict[str, Any]]:
    """A web container and a worker container (both as root), sharing one metrics
    directory as docker/compose.yaml has them."""
    client, image = console_image
    redis_url = own_redis(test_env["REDIS_URL"], REDIS_DB)
    redis.Redis.from_url(redis_url).flushdb()
    socket_path = _redis_socket(redis_url)
    var_dir = str(settings.VAR_DIR)
    common = {
        "DATABASE_URL": test_env["DATABASE_URL"],
        "REDIS_URL": redis_url,
        "SYNTHORG_ENV": "test",
        # The session's var/: its keys (one audit chain), and the agents' workspaces.
        "SYNTHORG_VAR_DIR": var_dir,
        "LOG_FORMAT": "json",
    }
    port = free_port()
    worker_name = f"console-image-{uuid.uuid4().hex[:8]}"
    binds = [socket_path, var_dir]
    containers: list[Any] = []
    metrics = metrics_volume(client)
    try:
        web = _container(
            client, image, ["web"],
            environment={**common, "HOST": "127.0.0.1", "PORT": str(port)}, binds=binds,
            var_dir=var_dir, metrics=metrics.name,
        )  # fmt: skip
        containers.append(web)
        worker = _container(
            client, image, ["worker"], sandboxes=True,
            environment={**common, "SYNTHORG_WORKER_NAME": worker_name,
                         "SYNTHORG_WORKER_CALLS": "8"},
            binds=binds, var_dir=var_dir, metrics=metrics.name,
        )  # fmt: skip
        containers.append(worker)
        url = f"http://127.0.0.1:{port}"
        beats = redis.Redis.from_url(redis_url)

        def up(container: Any, check: Any) -> bool:
            container.reload()
            if container.status == "exited":
                raise AssertionError(container.logs(tail=60).decode(errors="replace"))
            return bool(check())

        wait_until(
            lambda: up(web, lambda: http_status(url + "/healthz") in (200, 503)),
            timeout=120,
            what="the web container to answer",
        )
        wait_until(
            lambda: up(worker, lambda: beats.keys(f"synthorg:heartbeat:worker:{worker_name}@*")),
            timeout=120,
            what="the worker container's heartbeat",
        )
        yield {
            "url": url, "web": web, "worker": worker, "image": image, "client": client,
            "environment": common, "binds": binds, "var_dir": var_dir,
        }  # fmt: skip
    finally:
        for container in containers:
            container.remove(force=True)
        metrics.remove(force=True)


def _done(http: httpx.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = http.post(
        "/api/v1/invocations/", json={"tool": tool, "arguments": arguments, "wait": 60}
    )
    assert response.status_code in (200, 201), response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_call_through_the_web_container_runs_on_the_worker_container(
    console: dict[str, Any],
) -> None:
    created = agent_create(
        name=f"agent-{uuid.uuid4().hex[:10]}", access_level="elevated", autonomy="full"
    )
    (Path(created.agent.workspace) / "note.txt").write_text("served by the console image")
    headers = {"Authorization": f"Bearer {created.token}"}
    with httpx.Client(base_url=console["url"], headers=headers, timeout=90) as http:
        read = _done(http, "read_file", {"path": "note.txt"})
        assert read["status"] == "succeeded", (read.get("error"), console["worker"].logs(tail=30))
        assert "served by the console image" in read["result"]["content"]
        # The worker container runs as root; the agent's command never does.
        who = _done(http, "shell_command", {"argv": ["id", "-u"]})
        assert who["status"] == "succeeded", (who.get("error"), console["worker"].logs(tail=20))
        assert who["result"]["content"].strip() not in ("", "0"), who
    # Only the worker container consumes this Redis database's queues.
    assert "execute_invocation" in console["worker"].logs().decode(errors="replace")


def _calls_counted(url: str, tool: str) -> float:
    """synthorg_calls_total{tool, status="succeeded"} on a web node's /metrics."""
    response = httpx.get(url + "/metrics", timeout=30)
    assert response.status_code == 200, response.text[:500]
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name == "synthorg_calls_total" and sample.labels == {
                "tool": tool, "status": "succeeded",
            }:  # fmt: skip
                return float(sample.value)
    return 0.0


def test_a_call_run_by_the_worker_container_counts_on_the_web_containers_metrics(
    console: dict[str, Any],
) -> None:
    # Control: a web node with a metrics directory of its own (each container its own
    # tmpfs, as compose had it) on the same database, Redis and worker.
    port = free_port()
    alone = _container(
        console["client"], console["image"], ["web"],
        environment={**console["environment"], "HOST": "127.0.0.1", "PORT": str(port)},
        binds=console["binds"], var_dir=console["var_dir"],
    )  # fmt: skip
    try:
        alone_url = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            alone.reload()
            assert alone.status != "exited", alone.logs(tail=60).decode(errors="replace")
            return http_status(alone_url + "/healthz") in (200, 503)

        wait_until(answers, timeout=120, what="the control web container to answer")
        created = agent_create(
            name=f"agent-{uuid.uuid4().hex[:10]}", access_level="standard", autonomy="full"
        )
        (Path(created.agent.workspace) / "counted.txt").write_text("counted")
        shared_before = _calls_counted(console["url"], "read_file")
        alone_before = _calls_counted(alone_url, "read_file")
        headers = {"Authorization": f"Bearer {created.token}"}
        with httpx.Client(base_url=console["url"], headers=headers, timeout=90) as http:
            read = _done(http, "read_file", {"path": "counted.txt"})
        assert read["status"] == "succeeded", read.get("error")

        # The worker container counts the call as it settles it, after its commit.
        wait_until(
            lambda: _calls_counted(console["url"], "read_file") >= shared_before + 1,
            timeout=60,
            what="the worker container's count on the web container's /metrics",
        )
        assert _calls_counted(alone_url, "read_file") == alone_before
        # Both processes are pid 1 of their containers, yet each writes its own file.
        listed = console["web"].exec_run(["ls", f"{console['var_dir']}/metrics"])
        writers = {
            name.removeprefix("counter_").removesuffix(".db")
            for name in listed.output.decode().split()
            if name.startswith("counter_")
        }
        assert len(writers) >= 2 and all(w.endswith("-1") for w in writers), writers
    finally:
        alone.remove(force=True)


def test_the_image_runs_as_the_consoles_user_unless_told_otherwise(
    console: dict[str, Any],
) -> None:
    image = console["client"].images.get(console["image"])
    assert image.attrs["Config"]["User"] == f"{CONSOLE_UID}:{CONSOLE_UID}"
    assert image.labels.get(SOURCE_LABEL) and image.labels.get("synthorg.image") == "console"
    out = console["client"].containers.run(
        console["image"], network_mode="none", remove=True, labels=MANAGED,
        entrypoint=["sh", "-c", "id -u; id -u synthorg-sandbox; bwrap --version"],
    ).decode().split()  # fmt: skip
    assert out[:2] == [str(CONSOLE_UID), "10001"] and out[2] == "bubblewrap", out


def test_an_unknown_role_is_refused_with_the_allowed_ones(console: dict[str, Any]) -> None:
    out = console["client"].containers.run(
        console["image"], ["serve"], network_mode="none", remove=True, stderr=True,
        stdout=True, labels=MANAGED, entrypoint=["sh", "-c", "synthorg \"$@\"; echo rc=$?", "-"],
    ).decode()  # fmt: skip
    assert "unknown role 'serve'" in out and "web, worker" in out and "rc=2" in out


def test_the_compose_healthcheck_passes_with_the_example_allowed_hosts(
    console: dict[str, Any],
) -> None:
    # As docker/console.env.example sets it: one public name, behind a TLS proxy.
    port = free_port()
    web = _container(
        console["client"], console["image"], ["web"],
        environment={**console["environment"], "HOST": "127.0.0.1", "PORT": str(port),
                     "ALLOWED_HOSTS": "console.example.org", "SECURE_PROXY_SSL_HEADER": "true"},
        binds=console["binds"], var_dir=console["var_dir"],
    )  # fmt: skip
    try:
        said: list[bytes] = [b""]

        def healthy() -> bool:
            web.reload()
            assert web.status != "exited", web.logs(tail=60).decode(errors="replace")
            check = web.exec_run(["synthorg", "healthcheck"])
            said[0] = check.output
            return check.exit_code == 0

        try:
            wait_until(healthy, timeout=120, what="the compose healthcheck to pass")
        except AssertionError as failure:
            raise AssertionError(
                f"{failure}; it said {said[0][-500:]!r}; the node's log: "
                f"{web.logs(tail=40).decode(errors='replace')}"
            ) from None
        # Control: asked for as 127.0.0.1 the same node refuses (a host it does not serve).
        bare = web.exec_run(
            ["python3", "-c", "import urllib.request as u; "
             f"u.urlopen('http://127.0.0.1:{port}/healthz', timeout=4)"]
        )  # fmt: skip
        assert bare.exit_code != 0 and b"400" in bare.output, bare.output[-500:]
    finally:
        web.remove(force=True)


def _probe(console: dict[str, Any], *, sandboxes: bool) -> tuple[int, str]:
    container = _container(
        console["client"], console["image"], ["manage", "synthorg_sandbox", "probe"],
        environment={"SYNTHORG_ENV": "test", "SYNTHORG_VAR_DIR": "/tmp/probe-var"},
        binds=[], sandboxes=sandboxes, network_mode="none",
    )  # fmt: skip
    try:
        status = container.wait(timeout=120)["StatusCode"]
        return status, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


def test_a_worker_without_the_sandbox_options_reports_its_backends_broken(
    console: dict[str, Any],
) -> None:
    # Docker's default confinement: the sandboxes cannot make their namespaces, and the
    # probe says so (calls are then refused, never run unconfined).
    status, out = _probe(console, sandboxes=False)
    assert status == 1 and "configured but not working here" in out, out[-2000:]
    assert "namespace" in out.rsplit("configured but not working here", 1)[1]
    # Positive control: with compose's worker options every configured backend works.
    status, out = _probe(console, sandboxes=True)
    assert status == 0 and "configured but not working here" not in out, out[-2000:]
