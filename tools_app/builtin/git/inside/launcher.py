"""The program that starts git inside the sandbox: standard library only.

It reaches the sandbox like the file runner, as ``python3 -I -S -c SOURCE
SPEC-WORDS... -- GIT-ARGS...`` (``name=value`` words written by
``git_command``), so the check and the use happen in one process, as the
sandbox's user, on what that process sees:

1. find the repository (``.git`` a plain directory: a ``.git`` file, a link,
   ``commondir`` or ``objects/info/alternates`` is refused), and refuse when
   anything under ``.git`` is a symbolic link (nothing there is followed);
2. read ``.git/config`` once (``O_NOFOLLOW``) into a private copy, have git
   parse that copy (``--no-includes``), refuse a key outside the allowed rules
   (``section.name``, ``section.*.name`` for any subsection, ``section.**``);
3. write a private common directory: a ``config`` holding only the format
   keys (and a default author, which the repository's own ``user.*`` beats),
   and links to the repository's objects, refs, logs, info, packed-refs and
   shallow file; the other checked keys go in ``GIT_CONFIG_COUNT``;
4. exec git with ``GIT_DIR`` the repository, ``GIT_COMMON_DIR`` the private
   directory, the hardening environment and ``-c`` options from ``SPEC``.

Git therefore never opens the repository's own config file: rewriting it
while git runs changes nothing. A link planted under ``.git`` after the walk
is followed by git, but inside a namespace or container it can only reach
the agent's own workspace. A refusal is one line on stderr starting with
``REFUSED_MARKER`` and exit status ``REFUSED_EXIT``.

Modes: ``repo`` (the working directory is the work tree), ``none`` (no
repository: clone; git runs from an empty private directory, the arguments
named by ``path_arg`` made absolute first), ``discover`` (shell_command:
every ``-C DIR`` among git's global options is applied here, then the
repository is looked for upwards, never above the workspace; none found
means no repository, and git may not look further either).

It imports nothing beyond ``os``, ``sys`` and ``stat``: every git call pays
for this interpreter's start, and ``re``, ``json``, ``subprocess`` or
``tempfile`` would triple it.
"""

from __future__ import annotations

import _signal
import os
import stat
import sys

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


def run_git(argv: list[str], env: dict[str, str], cwd: str) -> tuple[int, bytes, bytes]:
    """Run a git helper command; (status, stdout, stderr), both read to the end."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    here = os.getcwd()
    os.chdir(cwd)
    try:
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions)
    finally:
        os.chdir(here)
        os.close(out_w)
        os.close(err_w)
    out = _read_all(out_r)
    err = _read_all(err_r)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out, err


def _read_all(fd: int) -> bytes:
    # Small outputs (a config listing, a message); read one pipe, then the other.
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def parse_config(data: bytes, env: dict[str, str], scratch: str) -> list[tuple[str, str]]:
    """``[(key, value)]`` as git itself reads ``data`` (a private copy), includes ignored."""
    if not data:
        return []
    copy = os.path.join(scratch, "config.checked")
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    status, out, err = run_git(
        ["git", "config", "--file", copy, "--no-includes", "--null", "--list"], env, scratch
    )
    if status != 0:
        message = err.decode("utf-8", "replace").strip()[-300:]
        raise Refused(f"the repository's config cannot be read: {message}")
    entries = []
    for item in out.decode("utf-8", "surrogateescape").split("\0"):
        if item:
            key, _, value = item.partition("\n")
            entries.append((key, value))
    return entries


def rule_matches(rule: str, key: str) -> bool:
    """``section.name``, ``section.*.name`` (any subsection) or ``section.**``."""
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    rule_section, _, rule_rest = rule.partition(".")
    if rule_section != section.lower():
        return False
    if rule_rest == "**":
        return True
    if rule_rest.startswith("*."):
        return bool(subsection) and name.lower() == rule_rest[2:]
    return not subsection and name.lower() == rule_rest


def check_entries(
    entries: list[tuple[str, str]], allowed: list[str], dropped: list[str]
) -> list[tuple[str, str]]:
    """The entries to pass on; a key outside ``allowed`` is refused."""
    kept = []
    for key, value in entries:
        if not any(rule_matches(rule, key) for rule in allowed):
            raise Refused(
                f"the repository's config sets {key!r}, which can make git run programs or "
                "reach other places; remove it from .git/config"
            )
        if not any(rule_matches(rule, key) for rule in dropped):
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
    """Apply (and remove) every ``-C DIR`` among git's global options; the work tree
    holding the directory that leaves, or None. Git must not apply ``-C`` itself:
    it would look for a repository the launcher did not check."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        if args[index] == "-C" and index + 1 < len(args):
            os.chdir(args[index + 1])
            del args[index : index + 2]
        else:
            index += 1
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
    spec: dict[str, list[str]], args: list[str], env: dict[str, str], scratch: str
) -> tuple[list[str], dict[str, str]]:
    """Check everything and return (argv, env) for git."""
    mode = spec["mode"][0]
    options = spec.get("option", [])
    top = None
    if mode == "repo":
        top = os.getcwd()
    elif mode == "discover":
        depth = int(spec["ceiling_depth"][0])
        ceiling = os.path.realpath(os.path.join(os.getcwd(), *[".."] * depth))
        top = discover(args, ceiling)
        if top is None:
            env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(ceiling) or "/"
    if top is None:
        if mode == "none":
            for index in spec.get("path_arg", []):
                args[int(index)] = os.path.abspath(args[int(index)])
            os.chdir(scratch)  # nothing to discover from here
        return ["git", *options, *args], env
    git_dir = os.path.join(top, ".git")
    shown = _relative(top, os.getcwd()) if mode == "discover" else spec.get("shown", ["."])[0]
    check_git_dir(git_dir, shown)
    data = read_config(git_dir, int(spec["max_config_bytes"][0]))
    entries = check_entries(
        parse_config(data, env, scratch), spec.get("allow", []), spec.get("drop", [])
    )
    if spec.get("print_config") == ["1"]:
        sys.stdout.write("".join(f"{k}\n{v}\0" for k, v in entries))
        sys.exit(0)
    identity = spec.get("identity")
    common, passed = make_common_dir(
        git_dir, entries, scratch, spec.get("writable") == ["1"], identity
    )
    env.update(config_env(passed))
    env.update({"GIT_DIR": git_dir, "GIT_WORK_TREE": top, "GIT_COMMON_DIR": common})
    return ["git", *options, *args], env


def read_spec(words: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """``name=value`` words up to ``--`` (names may repeat), then git's arguments."""
    spec: dict[str, list[str]] = {}
    end = words.index("--")
    for word in words[:end]:
        name, _, value = word.partition("=")
        spec.setdefault(name, []).append(value)
    return spec, words[end + 1 :]


def main() -> None:
    spec, args = read_spec(sys.argv[1:])
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for assignment in spec.get("env", []):
        name, _, value = assignment.partition("=")
        env[name] = value
    base = env.get("TMPDIR") or "/tmp"  # noqa: S108 - the sandbox's private directory
    scratch = os.path.join(base, f"synthorg-git-{os.getpid()}-{os.urandom(6).hex()}")
    try:
        os.mkdir(scratch, 0o700)
        argv, env = prepare(spec, args, env, scratch)
    except Refused as exc:
        sys.stderr.write(f"{REFUSED_MARKER}{exc.code}: {exc}\n")
        sys.exit(REFUSED_EXIT)
    except OSError as exc:
        sys.stderr.write(f"{REFUSED_MARKER}{_PATH}: {exc.strerror}: {exc.filename}\n")
        sys.exit(REFUSED_EXIT)
    sys.stdout.flush()
    # Python ignores SIGPIPE; git (``git log | head``) expects the default.
    _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    os.execvpe("git", argv, env)  # noqa: S606 - argv is a list; no shell reads it


if __name__ == "__main__":
    main()
