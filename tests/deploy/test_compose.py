"""docker/compose.yaml: every service runs an image and a role that exist, the queues
are all served, and Debian's docker-compose validates the file offline."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.testing import require
from synthorg_site.celery import QUEUES
from synthorg_site.console_image.build import CONSOLE_IMAGE

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
CONSOLE_IMAGE_REF = f"${{SYNTHORG_IMAGE:-{CONSOLE_IMAGE}}}"
MUST_BE_SET = ("SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "SYNTHORG_AUDIT_KEYS")
METRICS_MOUNT = "synthorg-metrics:/var/lib/synthorg/metrics"
# The roles whose processes count calls, decisions and sandbox runs.
COUNTING_ROLES = ("web", "worker", "beat")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    parsed: dict[str, Any] = yaml.safe_load((DOCKER_DIR / "compose.yaml").read_text())
    return parsed


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = compose["services"]
    return found


def _roles() -> set[str]:
    script = (DOCKER_DIR / "console" / "entrypoint.sh").read_text()
    return set(re.findall(r"^  ([a-z]+)\)$", script, flags=re.MULTILINE))


def _console(services: dict[str, Any]) -> dict[str, Any]:
    # As written, or as docker-compose resolves it.
    images = (CONSOLE_IMAGE_REF, CONSOLE_IMAGE)
    return {name: s for name, s in services.items() if s["image"] in images}


def test_every_console_service_runs_a_role_of_the_image(services: dict[str, Any]) -> None:
    roles = _roles()
    assert roles == {"web", "worker", "beat", "migrate", "manage", "healthcheck"}
    console = _console(services)
    assert set(console) >= {"migrate", "web-1", "web-2", "beat", "worker-default"}
    for name, service in console.items():
        assert service["command"][0] in roles, name
        assert service["env_file"] == ["console.env"], name
    assert [n for n, s in console.items() if s["command"] == ["beat"]] == ["beat"]
    for name, service in console.items():
        if service["command"] == ["web"]:
            # The image's own check: /healthz by a name ALLOWED_HOSTS accepts.
            assert service["healthcheck"]["test"] == ["CMD", "synthorg", "healthcheck"], name
        if service["command"][0] == "worker":
            assert service["stop_grace_period"] == "90s", f"{name} finishes its calls"
    others = {n: s["image"] for n, s in services.items() if n not in console}
    assert others == {
        "postgres": "${POSTGRES_IMAGE:-postgres:16-bookworm}",
        "redis": "${REDIS_IMAGE:-redis:7-bookworm}",
        "proxy": "${NGINX_IMAGE:-nginx:1.26-bookworm}",
    }


def test_every_queue_has_a_worker_and_sandboxes_never_run_as_the_worker(
    services: dict[str, Any],
) -> None:
    served: list[str] = []
    for name, service in _console(services).items():
        if service["command"][0] != "worker":
            continue
        queues = service["command"][1].split(",")
        served += queues
        if any(q.startswith("sandbox.") for q in queues):
            # Root in its container so that commands drop to the sandbox user.
            assert service["user"] == "root", name
        else:
            assert "user" not in service, f"{name} needs no root: it runs no command"
    assert sorted(served) == sorted(QUEUES)


def test_web_nodes_are_the_proxys_upstream_and_start_after_migrate(
    services: dict[str, Any],
) -> None:
    conf = (DOCKER_DIR / "nginx" / "console.conf").read_text()
    webs = sorted(n for n, s in _console(services).items() if s["command"] == ["web"])
    assert webs == ["web-1", "web-2"]
    for web in webs:
        assert f"server {web}:8000 " in conf
        assert services[web]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
    assert "ssl_certificate     /etc/nginx/certs/console.crt;" in conf
    assert "proxy_set_header Upgrade $http_upgrade;" in conf
    assert "./nginx/certs:/etc/nginx/certs:ro" in services["proxy"]["volumes"]


def _counting(services: dict[str, Any]) -> dict[str, Any]:
    return {n: s for n, s in _console(services).items() if s["command"][0] in COUNTING_ROLES}


def _metrics_layout_refusals(services: dict[str, Any], volumes: dict[str, Any]) -> list[str]:
    """Why a web node's /metrics would miss some process's counts (empty when none)."""
    refusals = []
    for name, service in _counting(services).items():
        mounts = [str(v).removesuffix(":rw") for v in service.get("volumes", [])]
        if METRICS_MOUNT not in mounts:
            refusals.append(f"{name} does not mount {METRICS_MOUNT}")
        if any("/var/lib/synthorg/metrics" in str(t) for t in service.get("tmpfs", [])):
            refusals.append(f"{name} hides it under a tmpfs of its own")
    options = (volumes.get("synthorg-metrics") or {}).get("driver_opts") or {}
    if options.get("type") != "tmpfs" or "uid=10002" not in options.get("o", ""):
        refusals.append("synthorg-metrics is not a tmpfs owned by the console's user")
    return refusals


def test_every_process_counts_into_the_directory_the_web_nodes_read(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    counting = _counting(services)
    assert set(counting) == {
        "web-1", "web-2", "beat", "worker-default", "worker-subprocess", "worker-namespace",
        "worker-docker",
    }  # fmt: skip
    assert _metrics_layout_refusals(services, compose["volumes"]) == []
    assert "mode=0700" in compose["volumes"]["synthorg-metrics"]["driver_opts"]["o"]
    # Control: the layout the file had before, each container with a tmpfs of its own.
    split = {
        **services,
        **{
            name: {
                **service,
                "volumes": [v for v in service["volumes"] if "metrics" not in v],
                "tmpfs": ["/var/lib/synthorg/metrics:uid=10002,gid=10002,mode=0700"],
            }
            for name, service in counting.items()
        },
    }
    refused = _metrics_layout_refusals(split, compose["volumes"])
    assert len(refused) == 2 * len(counting), refused


def test_the_env_example_names_every_setting_production_requires() -> None:
    example = (DOCKER_DIR / "console.env.example").read_text()
    names = set(re.findall(r"^([A-Z_]+)=", example, flags=re.MULTILINE))
    assert set(MUST_BE_SET) <= names
    assert "SYNTHORG_ENV=production" in example


def test_the_env_example_trusts_only_the_proxy_and_keeps_metrics_behind_a_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from common.platform.client_address import parse_address, trusted_networks
    from common.platform.environment import load_environment

    example = (DOCKER_DIR / "console.env.example").read_text()
    values = dict(re.findall(r"^([A-Z_]+)=(.*)$", example, flags=re.MULTILINE))
    assert values["SYNTHORG_METRICS_ALLOW_LOOPBACK"] == "false"
    for name in ("SYNTHORG_TRUSTED_PROXIES", "SYNTHORG_METRICS_ALLOW_LOOPBACK"):
        monkeypatch.setenv(name, values[name])
    loaded = load_environment()
    assert loaded.SYNTHORG_METRICS_ALLOW_LOOPBACK is False
    networks = trusted_networks(loaded.SYNTHORG_TRUSTED_PROXIES)
    # Docker's default pools for compose networks, and nothing public or loopback.
    for address in ("172.18.0.5", "192.168.16.3"):
        assert any(parse_address(address) in network for network in networks), address
    for address in ("127.0.0.1", "203.0.113.7", "198.51.100.9"):
        assert not any(parse_address(address) in network for network in networks), address


def _compose_config(directory: Path, *, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker-compose", "-f", "compose.yaml", "--profile", "docker", "config"]
        + (["-q"] if quiet else []),
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_docker_compose_validates_the_file_and_refuses_a_broken_one(tmp_path: Path) -> None:
    require(shutil.which("docker-compose") is not None, "docker-compose is not installed")
    shutil.copy(DOCKER_DIR / "compose.yaml", tmp_path / "compose.yaml")
    shutil.copytree(DOCKER_DIR / "nginx", tmp_path / "nginx")
    shutil.copy(DOCKER_DIR / "console.env.example", tmp_path / "console.env")
    done = _compose_config(tmp_path)
    assert done.returncode == 0, done.stderr
    # As docker-compose resolves the file (anchors, merges, a service's own volumes).
    resolved = yaml.safe_load(_compose_config(tmp_path, quiet=False).stdout)
    assert len(_counting(resolved["services"])) == 7
    assert _metrics_layout_refusals(resolved["services"], resolved["volumes"]) == []
    # Negative control: the validator refuses a service with an unknown key.
    broken = yaml.safe_load((tmp_path / "compose.yaml").read_text())
    broken["services"]["beat"]["restart_policy_typo"] = "always"
    (tmp_path / "compose.yaml").write_text(yaml.safe_dump(broken))
    refused = _compose_config(tmp_path)
    assert refused.returncode != 0 and "restart_policy_typo" in refused.stderr, refused.stderr
