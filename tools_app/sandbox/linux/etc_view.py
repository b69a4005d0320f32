"""The namespace sandbox's ``/etc``: the allowed host entries, mostly in one bind.

bubblewrap pays a mount and a full read of the mount table for every bind;
binding each allowed ``/etc`` entry on its own cost about 0.15 ms per entry,
some 3 ms per call. Small entries are copied instead, with their modes and
owners, into one private directory that is bound as ``/etc`` in one go:
regular files up to ``COPY_MAX_BYTES`` and directory trees of at most
``COPY_MAX_TREE_ENTRIES`` files, directories and symlinks, none carrying
extended attributes (an ACL may say more than the mode bits). Everything
else is still bound on its own, on top of the copy, as before.

Before every call each copied file is checked against the host (inode,
size, modification and change times, mode, owner: one stat each); any
difference builds a new copy, so a call never sees an older ``/etc`` than
the host's at its start. A copy in use by a running call is never changed
or removed (a bind shows the directory itself, so removing its files would
remove them inside the sandbox); it goes when its last call ends.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from tools_app.sandbox.linux.owners import left_by_gone_process, owner_tag

COPY_MAX_BYTES = 1024 * 1024
COPY_MAX_TREE_ENTRIES = 32
PREFIX = "synthorg-etc-"
# Where copies live: the first that is safe and writable. /run is root's and
# never aged out; /tmp is sticky, so nobody else can rename or replace them.
COPY_BASES: tuple[str, ...] = ("/run", "/tmp")  # noqa: S108

# (relative path, kind, inode, device, size, mtime, ctime, mode, uid, gid)
Signature = tuple[tuple[object, ...], ...]


@dataclass(frozen=True, slots=True)
class EtcLayout:
    """How one call's ``/etc`` is made: the copy to bind, and host entries bound over it."""

    copy_dir: str | None
    binds: tuple[str, ...]


@dataclass(slots=True)
class _Copy:
    path: str
    signature: Signature
    binds: tuple[str, ...]
    users: int = 0
    superseded: bool = False
    # The process that made it and alone removes it (a forked child does not).
    owner: int = field(default_factory=os.getpid)


@dataclass(slots=True)
class _Plan:
    signature: list[tuple[object, ...]] = field(default_factory=list)
    copies: list[str] = field(default_factory=list)
    binds: list[str] = field(default_factory=list)


def _entry_signature(rel: str, st: os.stat_result) -> tuple[object, ...]:
    return (
        rel,
        stat.S_IFMT(st.st_mode),
        st.st_ino,
        st.st_dev,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_mode,
        st.st_uid,
        st.st_gid,
    )


def _has_xattrs(path: str, *, follow: bool) -> bool:
    try:
        return bool(os.listxattr(path, follow_symlinks=follow))
    except OSError:
        return True


def _tree_signature(path: str, rel: str) -> list[tuple[object, ...]] | None:
    """Every entry below directory ``path``, or None when the tree is not worth copying."""
    found: list[tuple[object, ...]] = []
    pending = [(path, rel)]
    while pending:
        directory, directory_rel = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                mode = st.st_mode
                if stat.S_ISDIR(mode):
                    pending.append((entry.path, f"{directory_rel}/{entry.name}"))
                elif not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                    return None
                too_big = stat.S_ISREG(mode) and st.st_size > COPY_MAX_BYTES
                if too_big or _has_xattrs(entry.path, follow=False):
                    return None
                found.append(_entry_signature(f"{directory_rel}/{entry.name}", st))
                if len(found) > COPY_MAX_TREE_ENTRIES:
                    return None
    return found


def _plan(root: str, entries: tuple[str, ...], known_binds: frozenset[str]) -> _Plan:
    """Which entries to copy and which to bind, with the copied entries' signature.

    Directories in ``known_binds`` were too large to copy before; they stay
    bound without walking them again (a bind is always current).
    """
    plan = _Plan()
    for name in entries:
        path = f"{root}/{name}"
        try:
            # Followed, as a bind follows a symlink to what it names.
            st = os.stat(path)
        except OSError:
            plan.signature.append((name, "missing"))
            continue
        tree: list[tuple[object, ...]] | None = None
        if stat.S_ISREG(st.st_mode) and st.st_size <= COPY_MAX_BYTES:
            tree = []
        elif stat.S_ISDIR(st.st_mode) and path not in known_binds:
            try:
                tree = _tree_signature(path, name)
            except OSError:
                tree = None
        if tree is not None and not _has_xattrs(path, follow=True):
            plan.copies.append(name)
            plan.signature += [_entry_signature(name, st), *tree]
        else:
            plan.binds.append(path)
            plan.signature.append((name, "bind", stat.S_IFMT(st.st_mode)))
    return plan


def _copy_attributes(source_st: os.stat_result, target: str) -> None:
    if os.geteuid() == 0:
        os.chown(target, source_st.st_uid, source_st.st_gid, follow_symlinks=False)
    if not stat.S_ISLNK(source_st.st_mode):
        os.chmod(target, stat.S_IMODE(source_st.st_mode))
    times = (source_st.st_atime_ns, source_st.st_mtime_ns)
    os.utime(target, ns=times, follow_symlinks=False)


def _copy_entry(source: str, target: str, *, follow: bool) -> None:
    """Copy a file, symlink or directory tree with modes and owners (directories last)."""
    st = os.stat(source) if follow else os.lstat(source)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISDIR(st.st_mode):
        os.mkdir(target, 0o700)
        with os.scandir(source) as entries:
            for entry in entries:
                _copy_entry(entry.path, os.path.join(target, entry.name), follow=False)
    else:
        # Created private and filled before the source's mode is applied.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            shutil.copyfileobj(src, out)
    _copy_attributes(st, target)


def _build(root: str, plan: _Plan, base: str) -> _Copy:
    """A new copy of ``plan``'s entries, with mount points for the bound ones."""
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{owner_tag()}-", dir=base)
    binds = list(plan.binds)
    try:
        for name in plan.copies:
            try:
                _copy_entry(f"{root}/{name}", f"{path}/{name}", follow=True)
            except OSError:
                # Unreadable for this worker, or gone meanwhile: bound instead.
                _remove_tree(f"{path}/{name}")
                binds.append(f"{root}/{name}")
        for source in binds:
            # Mount points: a read-only /etc leaves bubblewrap no room to make them.
            target = f"{path}/{os.path.basename(source)}"
            if os.path.isdir(source):
                os.mkdir(target, 0o755)
            else:
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        os.chmod(path, 0o755)  # noqa: S103 - the sandbox user's bubblewrap binds it
    except OSError:
        _remove_tree(path)
        raise
    # The signature is the one taken before copying: a change during the
    # copy shows up at the next call's check and builds a new copy.
    return _Copy(path, tuple(plan.signature), tuple(binds))


def _remove_tree(path: str) -> None:
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path) or os.path.islink(path):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    # Owner write and search on every directory, or a copied 0500 one stops rmtree.
    for directory, _, _ in os.walk(path):
        with contextlib.suppress(OSError):
            os.chmod(directory, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def _safe_base(base: str) -> bool:
    """True when no other user can rename or replace what this process makes in ``base``."""
    try:
        st = os.lstat(base)
    except OSError:
        return False
    others_write = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid in (0, os.geteuid())
        and (not others_write or bool(st.st_mode & stat.S_ISVTX))
    )


class EtcView:
    """The copies of one list of ``/etc`` entries for this worker process."""

    def __init__(
        self, entries: tuple[str, ...], *, root: str = "/etc", bases: tuple[str, ...] = COPY_BASES
    ) -> None:
        self.entries = entries
        self.root = root
        self.bases = bases
        self.base = ""
        self._lock = threading.Lock()
        self._current: _Copy | None = None
        self._copies: list[_Copy] = []
        self._usable: bool | None = None
        self._pid = os.getpid()
        _all_views.append(self)

    def _forget_parents_copies(self) -> None:
        """In a forked child: the parent's copies are the parent's; start afresh."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._current = None
        self._copies = []
        self._usable = None

    def _all_bound(self) -> EtcLayout:
        return EtcLayout(None, tuple(f"{self.root}/{name}" for name in self.entries))

    @contextlib.contextmanager
    def lease(self) -> Iterator[EtcLayout]:
        """The layout for one call; its copy stays as it is until the call ends."""
        if self._pid != os.getpid():
            self._forget_parents_copies()
        with self._lock:
            if self._usable is None:
                usable = [b for b in self.bases if _safe_base(b) and os.access(b, os.W_OK)]
                self.base = usable[0] if usable else ""
                self._usable = bool(usable)
                if usable:
                    _sweep_stale(self.base)
            current = self._current
            if self._usable:
                known = frozenset(current.binds) if current is not None else frozenset()
                plan = _plan(self.root, self.entries, known)
                changed = current is None or current.signature != tuple(plan.signature)
                if changed or not os.path.isdir(current.path):  # type: ignore[union-attr]
                    try:
                        fresh = _build(self.root, plan, self.base)
                    except OSError:
                        fresh = None
                    if current is not None:
                        current.superseded = True
                    current = self._current = fresh
                    if fresh is not None:
                        self._copies.append(fresh)
            if current is not None:
                current.users += 1
        if current is None:
            # No private copy could be made: every entry bound, as it always worked.
            yield self._all_bound()
            return
        try:
            yield EtcLayout(current.path, current.binds)
        finally:
            with self._lock:
                current.users -= 1
                for done in [c for c in self._copies if c.superseded and c.users == 0]:
                    self._copies.remove(done)
                    _remove_tree(done.path)

    def remove_all(self) -> None:
        """Remove every copy this process made (at exit)."""
        if self._pid != os.getpid():
            return
        with self._lock:
            copies, self._copies, self._current = self._copies, [], None
        for copy in copies:
            if copy.owner == os.getpid():
                _remove_tree(copy.path)


def _sweep_stale(base: str) -> None:
    """Remove copies left by worker processes that no longer exist."""
    with contextlib.suppress(OSError), os.scandir(base) as entries:
        for entry in entries:
            owner = entry.name.removeprefix(PREFIX).split("-", 1)[0]
            if not (entry.name.startswith(PREFIX) and left_by_gone_process(owner)):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    _remove_tree(entry.path)


_all_views: list[EtcView] = []
_views: dict[tuple[str, ...], EtcView] = {}
_views_lock = threading.Lock()


def etc_view(entries: tuple[str, ...]) -> EtcView:
    """The shared view of ``entries`` in this process (a forked child gets its own)."""
    with _views_lock:
        view = _views.get(entries)
        if view is None:
            view = _views[entries] = EtcView(entries)
        return view


def _remove_own_views() -> None:
    for view in list(_all_views):
        view.remove_all()


def _forget_in_child() -> None:
    # The parent's copies are the parent's to remove; views in use by
    # backends built before the fork start afresh on their next lease.
    global _views_lock
    _views_lock = threading.Lock()
    _views.clear()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_remove_own_views)
