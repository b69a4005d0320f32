"""Access to the Docker SDK in one place.

The SDK ships no type information, and this package has its own ``docker``
module, so it is imported by absolute name here and handed out as ``Any``.
"""

from __future__ import annotations

import importlib
from typing import Any


def sdk() -> Any:
    """The ``docker`` SDK package."""
    return importlib.import_module("docker")


def sdk_errors() -> Any:
    """``docker.errors`` (APIError, NotFound, ImageNotFound, DockerException)."""
    return importlib.import_module("docker.errors")


def connect(docker_host: str | None, *, timeout: int = 30) -> Any:
    """A client for ``docker_host``, or for DOCKER_HOST / the default socket when None."""
    docker = sdk()
    if docker_host:
        return docker.DockerClient(base_url=docker_host, timeout=timeout)
    return docker.from_env(timeout=timeout)


def bind_mount(source: str, target: str, *, read_only: bool) -> Any:
    """A bind mount description for ``containers.create(mounts=[...])``."""
    types = importlib.import_module("docker.types")
    return types.Mount(target=target, source=source, type="bind", read_only=read_only)
