"""Build the sandbox images ``synthorg-sandbox:<version>`` and ``synthorg-sandbox-gui``.

With a reachable registry the normal ``docker/Dockerfile`` is built. Without
one (air-gapped machines, CI without egress) the same image is made from a
Debian root filesystem: ``docker/build-rootfs.sh`` runs ``debootstrap
--variant=minbase`` against the apt mirror the machine already uses, the
tarball is cached, and ``docker import`` applies the Dockerfile's CMD, USER,
WORKDIR and ENV. ``manage.py synthorg_sandbox build-image`` calls
:func:`build_sandbox_image`.

The GUI image (the browser and desktop categories on the docker backend) is always
made from that cached root filesystem: ``docker/build-gui-rootfs.sh`` adds Debian's
Chromium, Xvfb, xdotool, scrot, a few X programs and fonts in a chroot, and that
tarball is cached too (:func:`build_gui_image`), so plain calls keep the small image.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.vocabulary.sandbox import SANDBOX_GUI_IMAGE, SANDBOX_IMAGE
from tools_app.sandbox.backends.docker.engine import connect, sdk_errors
from tools_app.sandbox.errors import SandboxImageBuildError

DOCKER_DIR = Path(__file__).resolve().parents[4] / "docker"
REGISTRY_HOST = "registry-1.docker.io"
# Keep in step with docker/Dockerfile.
IMPORT_CHANGES: tuple[str, ...] = (
    'CMD ["sleep", "infinity"]',
    "USER 10001:10001",
    "WORKDIR /workspace",
    "ENV LANG=C.UTF-8",
    "ENV PATH=/usr/local/bin:/usr/bin:/bin",
    "LABEL synthorg.image=sandbox",
)


@dataclass(frozen=True, slots=True)
class ImageBuildReport:
    """What the build did: ``present``, ``dockerfile`` or ``rootfs`` (and from where)."""

    image: str
    method: str
    detail: str


def default_cache_dir() -> Path:
    """Where the root filesystem tarball is cached ($XDG_CACHE_HOME/synthorg)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "synthorg"


def registry_reachable(host: str = REGISTRY_HOST, *, timeout: float = 3.0) -> bool:
    """True when a TCP connection to the registry on 443 succeeds."""
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def apt_mirror() -> str | None:
    """The first Debian mirror this machine's apt uses (deb822 sources, then sources.list)."""
    sources = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for path in sources:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("URIs:"):
                for uri in line.split()[1:]:
                    if "security" not in uri:
                        return uri
    classic = Path("/etc/apt/sources.list")
    if classic.exists():
        for line in classic.read_text(encoding="utf-8", errors="replace").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "deb" and "security" not in words[1]:
                uri = words[1] if not words[1].startswith("[") else words[2]
                return uri
    return None


def rootfs_tarball_path(cache_dir: Path, mirror: str) -> Path:
    """The cache file for a rootfs built from ``mirror`` with the current recipe."""
    recipe = (DOCKER_DIR / "build-rootfs.sh").read_bytes()
    digest = hashlib.sha256(recipe + mirror.encode()).hexdigest()[:16]
    return cache_dir / f"sandbox-rootfs-{digest}.tar"


def gui_tarball_path(cache_dir: Path, base: Path) -> Path:
    """The cache file for a GUI root filesystem built on ``base`` with the current recipe."""
    recipe = (DOCKER_DIR / "build-gui-rootfs.sh").read_bytes()
    digest = hashlib.sha256(recipe + base.name.encode()).hexdigest()[:16]
    return cache_dir / f"sandbox-gui-rootfs-{digest}.tar"


def _client(client: Any | None) -> Any:
    return client if client is not None else connect(None, timeout=600)


def _present(engine: Any, tag: str) -> ImageBuildReport | None:
    """The report for ``tag`` when the engine has it already."""
    try:
        engine.images.get(tag)
    except sdk_errors().ImageNotFound:
        return None
    return ImageBuildReport(tag, "present", "image already in the engine")


def build_sandbox_image(
    *,
    tag: str = SANDBOX_IMAGE,
    client: Any | None = None,
    cache_dir: Path | None = None,
    force: bool = False,
    use_registry: bool | None = None,
    log: Callable[[str], None] = lambda message: None,
) -> ImageBuildReport:
    """Make sure the image ``tag`` exists in the engine, building it if needed.

    ``use_registry`` None means: try the Dockerfile when the registry answers,
    else the debootstrap root filesystem. Raises SandboxImageBuildError with
    the reason when neither works.
    """
    errors = sdk_errors()
    engine = _client(client)
    if not force and (present := _present(engine, tag)) is not None:
        return present
    if use_registry is None:
        use_registry = registry_reachable()
    if use_registry:
        log(f"building {tag} from {DOCKER_DIR / 'Dockerfile'}")
        try:
            engine.images.build(path=str(DOCKER_DIR), tag=tag, rm=True, pull=True)
        except errors.DockerException as exc:
            raise SandboxImageBuildError(f"docker build of {tag} failed: {exc}") from exc
        return ImageBuildReport(tag, "dockerfile", str(DOCKER_DIR / "Dockerfile"))
    return _build_from_rootfs(engine, tag, cache_dir or default_cache_dir(), log)


def build_gui_image(
    *,
    tag: str = SANDBOX_GUI_IMAGE,
    client: Any | None = None,
    cache_dir: Path | None = None,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> ImageBuildReport:
    """Make sure the GUI image ``tag`` exists in the engine, building it if needed: the
    cached plain root filesystem (made first if missing) plus the GUI packages, from this
    machine's apt mirror. Raises SandboxImageBuildError with the reason when it cannot."""
    engine = _client(client)
    if not force and (present := _present(engine, tag)) is not None:
        return present
    cache = cache_dir or default_cache_dir()
    mirror = _mirror()
    cache.mkdir(parents=True, exist_ok=True)
    # Builds started at once (several workers, a test run's processes) make it one at a time.
    with open(cache / "gui-build.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and (present := _present(engine, tag)) is not None:
            return present
        base = _cached_rootfs(cache, mirror, log)
        tarball = gui_tarball_path(cache, base)
        if tarball.exists():
            log(f"using cached GUI root filesystem {tarball}")
        else:
            log(f"adding Chromium, Xvfb, xdotool and scrot to {base.name} from {mirror}")
            _run_recipe("build-gui-rootfs.sh", str(tarball), str(base), mirror)
        _import(engine, tarball, tag, log)
    return ImageBuildReport(tag, "rootfs", f"{base.name} plus GUI packages, cached at {tarball}")


def _mirror() -> str:
    mirror = apt_mirror()
    if mirror is None:
        raise SandboxImageBuildError(
            "no registry is reachable and no apt mirror is configured in /etc/apt; "
            "configure one or make the registry reachable"
        )
    return mirror


def _run_recipe(script: str, *args: str) -> None:
    if os.geteuid() != 0:
        raise SandboxImageBuildError(
            f"building a root filesystem ({script}) needs root; run the build as root"
        )
    done = subprocess.run(
        ["sh", str(DOCKER_DIR / script), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise SandboxImageBuildError(
            f"{script} failed (exit {done.returncode}): " + " | ".join(tail)
        )


def _cached_rootfs(cache_dir: Path, mirror: str, log: Callable[[str], None]) -> Path:
    """The plain root filesystem tarball, built with debootstrap the first time."""
    tarball = rootfs_tarball_path(cache_dir, mirror)
    if tarball.exists():
        log(f"using cached root filesystem {tarball}")
        return tarball
    cache_dir.mkdir(parents=True, exist_ok=True)
    log(f"building a Debian root filesystem from {mirror} (debootstrap, a few minutes)")
    _run_recipe("build-rootfs.sh", str(tarball), mirror)
    return tarball


def _build_from_rootfs(
    engine: Any, tag: str, cache_dir: Path, log: Callable[[str], None]
) -> ImageBuildReport:
    mirror = _mirror()
    tarball = _cached_rootfs(cache_dir, mirror, log)
    _import(engine, tarball, tag, log)
    return ImageBuildReport(tag, "rootfs", f"debootstrap from {mirror}, cached at {tarball}")


def _import(engine: Any, tarball: Path, tag: str, log: Callable[[str], None]) -> None:
    errors = sdk_errors()
    repository, _, version = tag.rpartition(":")
    log(f"importing {tarball} as {tag}")
    try:
        engine.api.import_image_from_file(
            str(tarball), repository=repository, tag=version, changes=list(IMPORT_CHANGES)
        )
        engine.images.get(tag)
    except errors.DockerException as exc:
        raise SandboxImageBuildError(f"docker import of {tarball} failed: {exc}") from exc
