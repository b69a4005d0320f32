"""Host paths bound read-only into a sandbox: ``sandboxing.namespace.extra_ro_binds``
(every namespace sandbox) and a stdio MCP server's ``ro_binds`` (that server's only).

A bind the sandbox would hide is refused at load: at or under a directory the sandbox
mounts of its own afterwards (its private ``/tmp``, ``/proc``, ``/dev``, the workspace,
the egress proxy's directory), or ``/`` itself (the whole host). Whether each path
exists depends on the host, so ``synthorg_config check`` asks that on the host it runs
on (``missing_binds``): bubblewrap leaves a missing one out without a word.
"""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING

from common.config.errors import ConfigProblem
from common.vocabulary.sandbox import SANDBOX_OWN_MOUNTS

if TYPE_CHECKING:
    from common.config.model import SynthOrgConfig


def covering_mount(path: str) -> str | None:
    """The sandbox's own mount that would hide a bind at ``path``, if any."""
    normal = posixpath.normpath(path)
    for mount in SANDBOX_OWN_MOUNTS:
        if normal == mount or normal.startswith(mount + "/"):
            return mount
    return None


def check_binds(value: tuple[str, ...]) -> tuple[str, ...]:
    """Refuse binds that are not absolute, name the whole host or would be hidden."""
    for path in value:
        if not path.startswith("/") or "\x00" in path:
            raise ValueError(f"{path!r} must be an absolute path")
        if ".." in path.split("/"):
            raise ValueError(f"{path!r}: write the path without '..'")
        if posixpath.normpath(path) in ("/", "//"):
            raise ValueError(f"{path!r} would bind the whole host; name the directory it needs")
        mount = covering_mount(path)
        if mount is not None:
            raise ValueError(
                f"{path!r} is at or under {mount}, which the sandbox mounts of its own after "
                "the binds, so the bind would be hidden; put it elsewhere (e.g. under /opt "
                "or /var/lib)"
            )
    return value


def missing_binds(config: SynthOrgConfig) -> tuple[ConfigProblem, ...]:
    """Every bind of ``config`` whose path does not exist on this host."""
    found: list[tuple[str, str]] = [
        (f"sandboxing.namespace.extra_ro_binds[{i}]", path)
        for i, path in enumerate(config.sandboxing.namespace.extra_ro_binds)
    ]
    for n, server in enumerate(config.mcp_servers):
        found += [(f"mcp_servers[{n}].ro_binds[{i}]", p) for i, p in enumerate(server.ro_binds)]
    return tuple(
        ConfigProblem(
            where,
            f"{path} does not exist on this host; the sandbox would leave it out without a "
            "word (create it, or correct the path)",
        )
        for where, path in found
        if not os.path.exists(path)
    )
