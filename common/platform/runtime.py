"""Where the console keeps its runtime files and how it reaches its embedded Redis.

Pure: no Django imports, so the launcher can use it before Django is configured.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]

MODES = ("dev", "test", "production")


def var_dir() -> Path:
    """The directory for the SQLite file, the secret key, sockets and caches."""
    return Path(os.environ.get("SYNTHORG_VAR_DIR", BASE_DIR / "var")).resolve()


def mode() -> str:
    """The run mode: dev (make run), test (make test) or production (the default)."""
    value = os.environ.get("SYNTHORG_ENV", "production").strip().lower()
    if value not in MODES:
        raise ValueError(f"SYNTHORG_ENV={value!r} is not one of {', '.join(MODES)}")
    return value


def run_mode_file() -> Path:
    """Where the launcher notes the mode it runs the console in, for manage.py to find."""
    return var_dir() / "run-mode"


def remember_mode() -> None:
    """Note this process's mode in var/, so later commands run against the same console."""
    path = run_mode_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".run-mode.{os.getpid()}")
    tmp.write_text(mode() + "\n")
    tmp.replace(path)


def remembered_mode() -> str | None:
    """The mode the launcher last ran the console of this var/ in, if it noted a valid one."""
    try:
        value = run_mode_file().read_text().strip().lower()
    except OSError:
        return None
    return value if value in MODES else None


def is_celery_process() -> bool:
    """True in `celery worker`/`celery beat` (console script or `python -m celery`)."""
    return any("celery" in part for part in Path(sys.argv[0]).parts[-2:]) if sys.argv else False


def embedded_redis_socket() -> Path:
    """The unix socket of the private redis-server the launcher starts."""
    return var_dir() / "redis" / "redis.sock"


def embedded_redis_url() -> str:
    return f"unix://{embedded_redis_socket()}?db=0"


def redis_url() -> str:
    """REDIS_URL when set, else the embedded Redis on its unix socket."""
    return os.environ.get("REDIS_URL") or embedded_redis_url()


def uses_embedded_redis() -> bool:
    return not os.environ.get("REDIS_URL")


def celery_broker_url(url: str) -> str:
    """Kombu spells a unix-socket Redis `redis+socket://PATH`; TCP URLs pass through."""
    if url.startswith("unix://"):
        path, _, query = url[len("unix://") :].partition("?")
        return f"redis+socket://{path}" + (f"?virtual_host={_db(query)}" if _db(query) else "")
    return url


def _db(query: str) -> str:
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if key == "db" and value:
            return value
    return ""


def generated_secret_key() -> str:
    """Read the secret key kept in var/, creating it (mode 0600) the first time.

    The key is written to a private temporary file and linked into place, so two
    processes starting at once agree on one key and never read a half-written file.
    """
    path = var_dir() / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".secret_key.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(64))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip()
