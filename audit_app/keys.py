"""Where the audit keys come from: `SYNTHORG_AUDIT_KEYS`, else a key file in var/.

In production the keys must be configured (the console refuses to start without
them): a key the console made for itself would sit beside the database it guards.
Elsewhere (dev, test) a key is made on first use in `var/audit_keys` (mode 0600, one
`ID:SECRET` a line, newest first), the way `var/secret_key` is. The file is read
again whenever it changes, so a rotation reaches every process of this machine
without a restart.
"""

from __future__ import annotations

import threading
from pathlib import Path

from django.conf import settings

from audit_app.chain import AuditKey, AuditKeyError, AuditKeyRing, new_audit_key
from common.platform.key_files import ensure_key_file, read_key_lines, write_key_lines

KEY_FILE_NAME = "audit_keys"
_SOURCE_ENV = "SYNTHORG_AUDIT_KEYS"

_cache_lock = threading.Lock()
_cached: tuple[tuple[int, int, int], AuditKeyRing] | None = None


def key_file() -> Path:
    return Path(settings.VAR_DIR) / KEY_FILE_NAME


def _entry(key: AuditKey) -> str:
    """One line of the key file: ``ID:SECRET``."""
    return f"{key.id}:{key.secret.decode()}"


def keys_from_environment() -> bool:
    return bool([k for k in settings.SYNTHORG_AUDIT_KEYS if k.strip()])


def audit_keys_configured() -> bool:
    """Whether a key exists already (SYNTHORG_AUDIT_KEYS, or the key file), without
    making one: from then on the log must be keyed, and an unkeyed one is a downgrade."""
    return keys_from_environment() or key_file().exists()


def audit_key_ring() -> AuditKeyRing:
    """The keys to use now; AuditKeyError when none may be used."""
    global _cached
    if keys_from_environment():
        return AuditKeyRing.parse(settings.SYNTHORG_AUDIT_KEYS, source=_SOURCE_ENV)
    if settings.SYNTHORG_ENV == "production":
        raise AuditKeyError(
            f"set {_SOURCE_ENV} (ID:SECRET entries, newest first, comma-separated) to "
            "write or verify the audit log in production (`manage.py synthorg_audit new-key` "
            "prints an entry)"
        )
    path = key_file()
    ensure_key_file(path, lambda: [_entry(new_audit_key())])
    st = path.stat()
    stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
    with _cache_lock:
        if _cached is not None and _cached[0] == stamp:
            return _cached[1]
        ring = AuditKeyRing.parse(read_key_lines(path), source=str(path))
        _cached = (stamp, ring)
        return ring


def key_file_prepend_new_key() -> AuditKeyRing:
    """Put a fresh key in front of the key file's keys; the older ones stay to verify."""
    if keys_from_environment() or settings.SYNTHORG_ENV == "production":
        raise AuditKeyError(
            f"the audit keys come from {_SOURCE_ENV}: put a new ID:SECRET entry first there "
            "(`synthorg_audit new-key` prints one) and restart the console; keep the old "
            "entries after it so older events still verify"
        )
    ring = audit_key_ring()
    key = new_audit_key()
    write_key_lines(key_file(), [_entry(key), *ring.lines()], exclusive=False)
    return audit_key_ring()
