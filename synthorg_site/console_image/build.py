"""Build the console image ``synthorg-console:<version>`` without a registry.

The base is the sandbox image, itself made without a registry when none answers
(tools_app/sandbox/backends/docker/image.py); the context comes from :mod:`.context`; the build runs
with no network. An image whose label ``synthorg.source`` matches the digest of the
current source and base is reused as it is. ``manage.py synthorg_console build-image``
calls :func:`build_console_image`.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.vocabulary.sandbox import SANDBOX_IMAGE
from synthorg_site.console_image.context import (
    BASE_PYTHON,
    prepare_context,
    source_digest,
    source_files,
)
from synthorg_site.console_image.errors import ConsoleImageError
from tools_app.sandbox.backends.docker.engine import connect, sdk_errors
from tools_app.sandbox.backends.docker.image import build_sandbox_image, default_cache_dir

CONSOLE_IMAGE_REPOSITORY = "synthorg-console"
CONSOLE_IMAGE_VERSION = "0.1.0"
CONSOLE_IMAGE = f"{CONSOLE_IMAGE_REPOSITORY}:{CONSOLE_IMAGE_VERSION}"
SOURCE_LABEL = "synthorg.source"


@dataclass(frozen=True, slots=True)
class ConsoleImageReport:
    """What the build did: ``present`` (up to date already) or ``built``, and its digest."""

    image: str
    method: str
    digest: str


def build_console_image(
    *,
    tag: str = CONSOLE_IMAGE,
    base: str = SANDBOX_IMAGE,
    client: Any | None = None,
    cache_dir: Path | None = None,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> ConsoleImageReport:
    """Make sure ``tag`` holds the console built from the current source on ``base``.

    Raises ConsoleImageError with the step and reason when it cannot.
    """
    errors = sdk_errors()
    engine = client if client is not None else connect(None, timeout=600)
    cache = cache_dir or default_cache_dir()
    try:
        build_sandbox_image(tag=base, client=engine, cache_dir=cache, log=log)
        base_id = engine.images.get(base).id
    except Exception as exc:  # SandboxImageBuildError or the engine's own errors
        raise ConsoleImageError(f"the base image {base} is not available: {exc}") from exc
    files = source_files()
    digest = source_digest(files) + "-" + base_id.removeprefix("sha256:")[:12]
    if not force and _labelled(engine, tag, digest):
        return ConsoleImageReport(tag, "present", digest)
    _same_python(engine, base)
    with tempfile.TemporaryDirectory(prefix="synthorg-console-build-", dir=cache) as tmp:
        context = Path(tmp)
        prepare_context(context, cache_dir=cache, files=files, log=log)
        log(f"building {tag} on {base} (no network inside the build)")
        try:
            engine.images.build(
                path=str(context),
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                network_mode="none",
                buildargs={"BASE_IMAGE": base},
                labels={SOURCE_LABEL: digest},
            )
        except errors.BuildError as exc:
            tail = " | ".join(
                str(line.get("stream") or line.get("error") or "").strip()
                for line in list(exc.build_log)[-6:]
            )
            raise ConsoleImageError(f"docker build of {tag} failed: {exc.msg}: {tail}") from exc
        except errors.DockerException as exc:
            raise ConsoleImageError(f"docker build of {tag} failed: {exc}") from exc
    return ConsoleImageReport(tag, "built", digest)


def _same_python(engine: Any, base: str) -> None:
    """The dependencies are installed here for the base's Python: both must be one release
    (compiled extensions and bytecode are per release)."""
    ask = ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
    host = subprocess.run([BASE_PYTHON, *ask[1:]], capture_output=True, text=True, check=False)
    try:
        inside = engine.containers.run(base, ask, remove=True, network_mode="none", user="0")
    except sdk_errors().DockerException as exc:
        raise ConsoleImageError(f"cannot run python3 in the base image {base}: {exc}") from exc
    if host.stdout.strip() != inside.decode().strip():
        raise ConsoleImageError(
            f"{BASE_PYTHON} here is Python {host.stdout.strip() or '?'} but the base image "
            f"{base} has {inside.decode().strip()}: build on a Debian host of the base's "
            "release (Debian 12 for the default base)"
        )


def _labelled(engine: Any, tag: str, digest: str) -> bool:
    try:
        image = engine.images.get(tag)
    except sdk_errors().ImageNotFound:
        return False
    return bool((image.labels or {}).get(SOURCE_LABEL) == digest)
