"""The build context of the console image, prepared on the host.

Nothing in the image build talks to a network: the locked dependencies are installed
here with uv for the base image's Python (Debian's ``/usr/bin/python3``, the same
release the sandbox image carries), bubblewrap comes as a ``.deb`` from this machine's
apt, and the project's source is copied as it is on disk. Pure: no Django imports.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from synthorg_site.console_image.errors import ConsoleImageError

PROJECT_DIR = Path(__file__).resolve().parents[2]
CONSOLE_DOCKER_DIR = PROJECT_DIR / "docker" / "console"
# Debian's python3 inside the base image is this same path on a Debian 12 host.
BASE_PYTHON = "/usr/bin/python3"
IMAGE_APP_DIR = "/opt/synthorg/app"
# The Debian packages the image adds to the base's root filesystem.
DEBIAN_PACKAGES: tuple[str, ...] = ("bubblewrap",)
# Never part of the image: development, tests, local state and caches.
EXCLUDED_NAMES = frozenset(
    {
        ".git", ".venv", "var", "node_modules", "tests", "bench", ".ci",
        "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
        "staticfiles",
        # The deployment's own settings and TLS keys never go into an image.
        "console.env", "certs",
    }
)  # fmt: skip
EXCLUDED_SUFFIXES = (".pyc", ".pyo", ".sqlite3")


def source_files(root: Path = PROJECT_DIR) -> list[Path]:
    """The project's files that go into the image, relative to ``root``, sorted."""
    found: list[Path] = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in EXCLUDED_NAMES)
        for name in files:
            if name not in EXCLUDED_NAMES and not name.endswith(EXCLUDED_SUFFIXES):
                found.append((Path(directory) / name).relative_to(root))
    return sorted(found)


def source_digest(files: Iterable[Path], root: Path = PROJECT_DIR) -> str:
    """A digest of the image's inputs: every source file's path and bytes."""
    digest = hashlib.sha256()
    for relative in files:
        digest.update(str(relative).encode() + b"\0")
        digest.update((root / relative).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _run(argv: list[str], what: str, *, cwd: Path | None = None) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise ConsoleImageError(f"{what} failed (exit {done.returncode}): " + " | ".join(tail))


def find_uv() -> str:
    """uv on PATH, or the one scripts/find-uv.sh installs into var/tools."""
    found = shutil.which("uv")
    if found:
        return found
    done = subprocess.run(
        ["bash", str(PROJECT_DIR / "scripts" / "find-uv.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    path = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0 or not path or path == "false":
        raise ConsoleImageError("uv is needed to install the locked dependencies: " + done.stderr)
    return str(PROJECT_DIR / path) if not os.path.isabs(path) else path


def site_packages(cache_dir: Path, log: Callable[[str], None]) -> Path:
    """The locked runtime dependencies for the base's Python, as one tarball cached by
    uv.lock (one file sends and unpacks much faster than its thousands of files)."""
    if not Path(BASE_PYTHON).exists():
        raise ConsoleImageError(
            f"{BASE_PYTHON} is missing: the dependencies are installed for Debian's python3, "
            "the one the image runs (apt-get install python3)"
        )
    lock = (PROJECT_DIR / "uv.lock").read_bytes() + (PROJECT_DIR / "pyproject.toml").read_bytes()
    client = PROJECT_DIR / "synthorg_client"
    client_digest = source_digest(source_files(client), client)
    key = hashlib.sha256(lock + client_digest.encode()).hexdigest()[:16]
    target = cache_dir / f"console-site-packages-{key}.tar"
    if target.exists():
        log(f"using cached dependencies {target}")
        return target
    uv = find_uv()
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="console-site-packages-", dir=cache_dir) as tmp:
        tree = Path(tmp) / "site-packages"
        requirements = Path(tmp) / "requirements.txt"
        log(f"installing the locked dependencies for {BASE_PYTHON} into {target}")
        done = subprocess.run(
            [uv, "export", "--frozen", "--no-dev", "--no-hashes", "--no-editable",
             "--no-header", "--no-annotate", "--quiet"],
            cwd=PROJECT_DIR, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise ConsoleImageError(f"uv export failed: {done.stderr.strip()[-500:]}")
        requirements.write_text(done.stdout)
        _run(
            [uv, "pip", "install", "--target", str(tree), "--python", BASE_PYTHON,
             "--no-deps", "--compile-bytecode", "--quiet", "-r", str(requirements)],
            "installing the dependencies with uv", cwd=PROJECT_DIR,
        )  # fmt: skip
        partial = Path(tmp) / "site-packages.tar"
        with tarfile.open(partial, "w") as archive:
            archive.add(tree, arcname="site-packages", filter=_root_owned)
        partial.rename(target)
    return target


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def debian_packages(directory: Path, log: Callable[[str], None]) -> list[Path]:
    """The image's extra .deb files: from apt's download cache, else ``apt-get download``."""
    directory.mkdir(parents=True, exist_ok=True)
    found: list[Path] = []
    for package in DEBIAN_PACKAGES:
        cached = sorted(Path("/var/cache/apt/archives").glob(f"{package}_*.deb"))
        if cached:
            shutil.copy2(cached[-1], directory / cached[-1].name)
        else:
            log(f"downloading {package} from this machine's apt mirror")
            _run(["apt-get", "download", package], f"apt-get download {package}", cwd=directory)
        matches = sorted(directory.glob(f"{package}_*.deb"))
        if not matches:
            raise ConsoleImageError(f"no .deb for {package} in {directory}")
        found.append(matches[-1])
    return found


def prepare_context(
    context: Path, *, cache_dir: Path, files: list[Path], log: Callable[[str], None]
) -> None:
    """Fill ``context`` (empty) with what docker/console/Dockerfile adds: the cached
    dependencies tarball, and ``console.tar`` with the source (compiled here by the
    base's Python), the entry point and the .deb files."""
    shutil.copy2(CONSOLE_DOCKER_DIR / "Dockerfile", context / "Dockerfile")
    _link(str(site_packages(cache_dir, log)), str(context / "site-packages.tar"))
    tree = context / "tree"
    app = tree / "opt" / "synthorg" / "app"
    for relative in files:
        (app / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT_DIR / relative, app / relative)
    _run(
        [BASE_PYTHON, "-m", "compileall", "-q", "-d", IMAGE_APP_DIR, str(app)],
        "compiling the source",
    )
    (tree / "usr" / "local" / "bin").mkdir(parents=True)
    shutil.copy2(CONSOLE_DOCKER_DIR / "entrypoint.sh", tree / "usr/local/bin/synthorg")
    debian_packages(tree / "tmp" / "synthorg-debs", log)
    with tarfile.open(context / "console.tar", "w") as archive:
        for child in sorted(tree.iterdir()):
            archive.add(child, arcname=child.name, filter=_root_owned)
    shutil.rmtree(tree)


def _link(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
