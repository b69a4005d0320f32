"""Build the configured backends and pick one per tool category.

Only backends the config references are built. A category whose backend
cannot run fails every call with the reason; nothing ever falls back to a
weaker backend. The browser and desktop categories on docker get a docker backend
of their own: the GUI image, a fresh container per call sized by that call's limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from common.config.sandbox import SandboxingConfig, _category
from common.vocabulary.sandbox import GUI_CATEGORIES
from tools_app.sandbox.backends.docker.backend import DockerSandbox, DockerSettings
from tools_app.sandbox.backends.docker.lifecycle import LifecycleStrategy
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.errors import SandboxConfigInvalidError
from tools_app.sandbox.logship import LogSink, default_sink
from tools_app.sandbox.protocol import NetworkPolicy, SandboxBackend
from tools_app.sandbox.standing import StandingLimits


def docker_settings(config: SandboxingConfig) -> DockerSettings:
    """The docker section as the backend's plain settings."""
    d = config.docker
    return DockerSettings(
        image=d.image,
        network=NetworkPolicy(d.network),
        memory_limit_bytes=d.memory_limit,
        cpu_limit=d.cpu_limit,
        pids_limit=d.pids_limit,
        tmpfs_size_bytes=d.tmpfs_size,
        timeout_seconds=d.timeout_seconds,
        strategy=LifecycleStrategy(d.lifecycle.strategy),
        grace_period_seconds=d.lifecycle.grace_period_seconds,
        ship_raw_logs=d.ship_raw_logs,
        max_log_bytes=d.max_log_bytes,
        docker_host=d.docker_host,
    )


def build_backend(
    name: str, config: SandboxingConfig, *, log_sink: LogSink = default_sink
) -> SandboxBackend:
    """One backend by name, configured from ``config``."""
    if name == "subprocess":
        s = config.subprocess
        return SubprocessSandbox(
            run_as_user=s.run_as_user,
            restricted_path=s.restricted_path,
            extra_safe_path_prefixes=s.extra_safe_path_prefixes,
            max_timeout_seconds=s.timeout_seconds,
            kill_grace_seconds=s.kill_grace_seconds,
            use_cgroup=s.use_cgroup,
            warm_python=s.warm_python,
            standing=StandingLimits(
                capacity=s.standing_runners, idle_seconds=s.standing_idle_seconds
            ),
        )
    if name == "namespace":
        n = config.namespace
        return NamespaceSandbox(
            run_as_user=n.run_as_user,
            bwrap_path=n.bwrap_path,
            extra_safe_path_prefixes=n.extra_safe_path_prefixes,
            extra_ro_binds=n.extra_ro_binds,
            tmpfs_size_bytes=n.tmpfs_size,
            max_timeout_seconds=n.timeout_seconds,
            kill_grace_seconds=n.kill_grace_seconds,
            use_cgroup=n.use_cgroup,
        )
    if name == "docker":
        return DockerSandbox(docker_settings(config), log_sink=log_sink)
    raise SandboxConfigInvalidError(
        f"unknown sandbox backend {name!r}; allowed: subprocess, namespace, docker"
    )


def gui_docker_settings(config: SandboxingConfig) -> DockerSettings:
    """The browser and desktop categories' docker settings: their image, and a container
    per call (nothing one page or program leaves behind meets the next call), sized by it."""
    return replace(
        docker_settings(config),
        image=config.docker.gui_image,
        strategy=LifecycleStrategy.PER_CALL,
        limits_per_call=True,
    )


@dataclass(frozen=True)
class SandboxBackends:
    """The built backends and the config that maps categories onto them."""

    config: SandboxingConfig
    backends: Mapping[str, SandboxBackend]
    gui: SandboxBackend | None = None
    """The docker backend of the GUI categories, when one of them uses docker."""

    def for_category(self, category: str) -> SandboxBackend:
        """The backend for ``category``; see :func:`resolve_backend_for_category`."""
        return resolve_backend_for_category(self, category)

    def network_for(self, category: str) -> NetworkPolicy:
        """The network policy a category's calls get (docker ``network_overrides``)."""
        docker = self.config.docker
        return NetworkPolicy(docker.network_overrides.get(_category(category), docker.network))

    def close(self) -> None:
        """Release every backend (containers, engine connections); errors isolated."""
        for backend in (*self.backends.values(), *([self.gui] if self.gui else [])):
            try:
                backend.close()
            except Exception:  # noqa: S112 - one backend's failure must not stop the rest
                continue


def build_sandbox_backends(
    config: SandboxingConfig, *, log_sink: LogSink = default_sink
) -> SandboxBackends:
    """Build the backends ``config`` references (nothing is probed or started here)."""
    built = {
        name: build_backend(name, config, log_sink=log_sink)
        for name in config.referenced_backends()
    }
    gui: SandboxBackend | None = None
    if any(config.backend_for(category) == "docker" for category in GUI_CATEGORIES):
        gui = DockerSandbox(gui_docker_settings(config), log_sink=log_sink)
    return SandboxBackends(config=config, backends=MappingProxyType(built), gui=gui)


def resolve_backend_for_category(backends: SandboxBackends, category: str) -> SandboxBackend:
    """The configured backend for ``category``.

    Unknown categories are refused. If that backend cannot run here its
    ``run`` raises SandboxUnavailableError on every call; no other backend is
    substituted.
    """
    try:
        name = backends.config.backend_for(category)
    except ValueError as exc:
        raise SandboxConfigInvalidError(str(exc)) from exc
    if name == "docker" and backends.gui is not None and _category(category) in GUI_CATEGORIES:
        return backends.gui
    return backends.backends[name]
