"""The program that starts git inside the sandbox: standard library only.

It reaches the sandbox like the file runner, as ``python3 -I -S -c SOURCE
SPEC GIT-ARGS...`` (``SPEC`` is JSON written by ``git_command``), so the check
and the use happen in one process, as the sandbox's user, on what that
process sees:

1. find the repository (``.git`` a plain directory: a ``.git`` file, a link,
   ``commondir`` or ``objects/info/alternates`` is refused), and refuse when
   anything under ``.git`` is a symbolic link (nothing there is followed);
2. read ``.git/config`` once (``O_NOFOLLOW``), have git parse those bytes from
   stdin (``--no-includes``), refuse a key outside the allowed patterns;
3. write a private common directory: a ``config`` holding only the format
   keys, and links to the repository's objects, refs, logs, info, packed-refs
   and shallow file; the other checked keys go in ``GIT_CONFIG_COUNT``;
4. exec git with ``GIT_DIR`` the repository, ``GIT_COMMON_DIR`` the private
   directory, the hardening environment and ``-c`` options from ``SPEC``.

Git therefore never opens the repository's own config file: rewriting it
while git runs changes nothing. A refusal is one line on stderr starting
with ``REFUSED_MARKER`` and exit status ``REFUSED_EXIT``.

Modes: ``repo`` (the working directory is the work tree), ``none`` (no
repository: clone; git runs from an empty private directory, the arguments
named in ``path_args`` made absolute first), ``discover`` (shell_command:
leading ``-C DIR`` options are applied, then the repository is looked for
upwards, never above the workspace; none found means no repository).
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
from typing import Any

REFUSED_MARKER = "synthorg-git-refused: "
REFUSED_EXIT = 125
COMMON_ENTRIES = ("objects", "refs", "logs", "info", "packed-refs", "shallow")
INDIRECTIONS = ("commondir", "objects/info/alternates", "config.worktree")
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC | os.O_NONBLOCK


class Refused(Exception):
    """The launcher will not start git; ``code`` and the message say why."""

    def __init__(self, message: str, code: str = "INVALID_ARGUMENT") -> None:
        super().__init__(message)
        self.code = code


_PATH = "PATH_NOT_REACHABLE"


def _relative(path: str, base: str) -> str:
    rel = os.path.relpath(path, base)
    return "." if rel == "." else rel


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def check_git_dir(git_dir: str, shown: str) -> None:
    """Refuse a ``.git`` that is not a plain directory or holds a link anywhere below."""
    try:
        mode = os.lstat(git_dir).st_mode
    except FileNotFoundError:
        raise Refused(f"{shown} is not a git repository (no .git directory)", _PATH) from None
    if not stat.S_ISDIR(mode):
        raise Refused(
            f"{shown} is not a git repository (.git is a file or link; .git files and links "
            "are not followed)",
            _PATH,
        )
    for indirection in INDIRECTIONS:
        if os.path.lexists(os.path.join(git_dir, indirection)):
            raise Refused(
                f".git/{indirection} points git outside this repository; it is not supported",
                _PATH,
            )
    pending = [git_dir]
    while pending:
        directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_symlink():
                    inside = _relative(entry.path, os.path.dirname(git_dir))
                    raise Refused(
                        f"{inside} is a symbolic link; links under .git are not followed, "
                        "remove it",
                        _PATH,
                    )
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)


def read_config(git_dir: str, limit: int) -> bytes:
    """The bytes of ``.git/config`` (empty when absent), read once without following links."""
    path = os.path.join(git_dir, "config")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise Refused(
            f".git/config cannot be opened ({exc.strerror}); links are not followed"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refused(".git/config must be a regular file")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Refused(f".git/config is larger than {limit} bytes")
    return data


def parse_config(data: bytes, env: dict[str, str], scratch: str) -> list[tuple[str, str]]:
    """``[(key, value)]`` as git itself reads ``data``, includes ignored."""
    if not data:
        return []
    done = subprocess.run(
        ["git", "config", "--file", "-", "--no-includes", "--null", "--list"],
        input=data,
        capture_output=True,
        env=env,
        cwd=scratch,
        check=False,
    )
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()[-300:]
        raise Refused(f"the repository's config cannot be read: {message}")
    entries = []
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if item:
            key, _, value = item.partition("\n")
            entries.append((key.lower(), value))
    return entries


def check_entries(
    entries: list[tuple[str, str]], allowed: list[str], dropped: list[str]
) -> list[tuple[str, str]]:
    """The entries to pass on; a key outside ``allowed`` is refused."""
    allowed_re = [re.compile(p) for p in allowed]
    dropped_re = [re.compile(p) for p in dropped]
    kept = []
    for key, value in entries:
        if not any(p.fullmatch(key) for p in allowed_re):
            raise Refused(
                f"the repository's config sets {key!r}, which can make git run programs or "
                "reach other places; remove it from .git/config"
            )
        if not any(p.fullmatch(key) for p in dropped_re):
            kept.append((key, value))
    return kept


def _config_value(value: str) -> str:
    """``value`` quoted for a config file (control characters dropped)."""
    kept = "".join(c for c in value if c >= " " and c != "\x7f")
    return '"' + kept.replace("\\", "\\\\").replace('"', '\\"') + '"'


def make_common_dir(
    git_dir: str,
    entries: list[tuple[str, str]],
    scratch: str,
    writable: bool,
    identity: list[str] | None = None,
) -> tuple[str, list[tuple[str, str]]]:
    """The private common directory git uses instead of the repository's own."""
    values = dict(entries)
    version = values.get("core.repositoryformatversion", "0")
    if version not in ("0", "1"):
        raise Refused(f"core.repositoryformatversion {version!r} is not supported")
    lines = ["[core]", f"\trepositoryformatversion = {version}", "\tbare = false"]
    object_format = values.get("extensions.objectformat")
    if object_format is not None:
        if object_format.lower() not in ("sha1", "sha256"):
            raise Refused(f"extensions.objectformat {object_format!r} is not supported")
        lines += ["[extensions]", f"\tobjectformat = {object_format.lower()}"]
    if identity:
        # Lowest priority: the repository's own user.* (passed as GIT_CONFIG_COUNT) wins.
        name, email = identity
        lines += ["[user]", f"\tname = {_config_value(name)}", f"\temail = {_config_value(email)}"]
    common = os.path.join(scratch, "common")
    os.mkdir(common, 0o700)
    with open(os.path.join(common, "config"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    real = os.path.abspath(git_dir)
    for name in COMMON_ENTRIES:
        target = os.path.join(real, name)
        if name == "logs" and writable and not os.path.lexists(target):
            os.mkdir(target)
        os.symlink(target, os.path.join(common, name))
    format_keys = ("core.repositoryformatversion", "core.bare")
    passed = [
        (k, v) for k, v in entries if k not in format_keys and not k.startswith("extensions.")
    ]
    return common, passed


def config_env(entries: list[tuple[str, str]]) -> dict[str, str]:
    """``GIT_CONFIG_COUNT`` variables carrying ``entries``."""
    env = {"GIT_CONFIG_COUNT": str(len(entries))}
    for index, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def discover(args: list[str], ceiling: str) -> str | None:
    """Apply leading ``-C DIR`` options; the work tree holding the directory, or None."""
    while len(args) >= 2 and args[0] == "-C":
        os.chdir(args[1])
        del args[:2]
    here = os.path.realpath(os.getcwd())
    if not _within(here, ceiling):
        raise Refused("-C leads outside the workspace", _PATH)
    while True:
        candidate = os.path.join(here, ".git")
        if os.path.lexists(candidate):
            return here
        if here == ceiling or here == "/":
            return None
        here = os.path.dirname(here)


def prepare(
    spec: dict[str, Any], args: list[str], env: dict[str, str], scratch: str
) -> tuple[list[str], dict[str, str]]:
    """Check everything and return (argv, env) for git."""
    mode = spec["mode"]
    top = None
    if mode == "repo":
        top = os.getcwd()
    elif mode == "discover":
        ceiling = os.path.realpath(os.path.join(os.getcwd(), *[".."] * spec["ceiling_depth"]))
        top = discover(args, ceiling)
        if top is None:
            env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(ceiling) or "/"
    if top is None:
        if mode == "none":
            for index in spec.get("path_args", ()):
                args[index] = os.path.abspath(args[index])
            os.chdir(scratch)  # nothing to discover from here
        return ["git", *spec["options"], *args], env
    git_dir = os.path.join(top, ".git")
    shown = _relative(top, os.getcwd()) if mode == "discover" else spec.get("shown", ".")
    check_git_dir(git_dir, shown)
    data = read_config(git_dir, spec["max_config_bytes"])
    entries = check_entries(
        parse_config(data, env, scratch), spec["allowed_keys"], spec.get("dropped_keys", ())
    )
    if spec.get("print_config"):
        print(json.dumps(dict(entries)))
        sys.exit(0)
    common, passed = make_common_dir(
        git_dir, entries, scratch, spec.get("writable", False), spec.get("identity")
    )
    env.update(config_env(passed))
    env.update({"GIT_DIR": git_dir, "GIT_WORK_TREE": top, "GIT_COMMON_DIR": common})
    return ["git", *spec["options"], *args], env


def main() -> None:
    spec = json.loads(sys.argv[1])
    args = list(sys.argv[2:])
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(spec["env"])
    scratch = tempfile.mkdtemp(prefix="synthorg-git-")
    try:
        argv, env = prepare(spec, args, env, scratch)
    except Refused as exc:
        sys.stderr.write(f"{REFUSED_MARKER}{exc.code}: {exc}\n")
        sys.exit(REFUSED_EXIT)
    except OSError as exc:
        sys.stderr.write(f"{REFUSED_MARKER}{_PATH}: {exc.strerror}: {exc.filename}\n")
        sys.exit(REFUSED_EXIT)
    sys.stdout.flush()
    # Python ignores SIGPIPE; git (``git log | head``) expects the default.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.execvpe("git", argv, env)  # noqa: S606 - argv is a list; no shell reads it


if __name__ == "__main__":
    main()
