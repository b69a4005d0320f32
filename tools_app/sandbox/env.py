"""The environment a sandboxed command sees: built from empty, never inherited whole.

An allowlist names what may pass from the worker; a denylist of secret-shaped
and library-injection names wins over the allowlist and over a tool's own
additions, so ``AWS_SECRET_ACCESS_KEY`` or ``LD_PRELOAD`` never get inside.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterable, Mapping

# Names copied from the worker when present. LC_* covers every locale facet.
ALLOWED_NAMES: frozenset[str] = frozenset(
    {"HOME", "PATH", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "USER", "LOGNAME"}
)
ALLOWED_PATTERNS: tuple[str, ...] = ("LC_*",)

# Matched case-insensitively against the whole name. Secret-shaped names first:
# only a granted named secret (``granted`` below) may use one of them.
SECRET_SHAPED_PATTERNS: tuple[str, ...] = (
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*PRIVATE*",
    "*COOKIE*",
    "*SESSION*",
    "*AUTH*",
)
INJECTION_PATTERNS: tuple[str, ...] = (
    # Dynamic loader and interpreter injection.
    "LD_*",
    "DYLD_*",
    "GIT_*",
    "DOCKER_*",
    "SSH_*",
    "GPG_*",
    "MALLOC_*",
)
DENIED_PATTERNS: tuple[str, ...] = SECRET_SHAPED_PATTERNS + INJECTION_PATTERNS
# The sandbox sets these itself.
SANDBOX_OWN_NAMES: frozenset[str] = frozenset({"PATH", "HOME", "TMPDIR", "PWD"})
DENIED_NAMES: frozenset[str] = frozenset(
    {
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "GLIBC_TUNABLES",
        "GCONV_PATH",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "RES_OPTIONS",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PYTHONUSERBASE",
        "PYTHONINSPECT",
        "PYTHONBREAKPOINT",
        "NODE_PATH",
        "NODE_OPTIONS",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "RUBYLIB",
        "RUBYOPT",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PROMPT_COMMAND",
        "PS4",
        "IFS",
        "CDPATH",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "all_proxy",
    }
)


# Both answers depend only on the name and the constant lists above; a worker
# sees the same few dozen names on every call, so matching runs once per name.
@functools.lru_cache(maxsize=4096)
def is_denied(name: str) -> bool:
    """True when ``name`` may never enter a sandbox, whoever asks for it."""
    if name in DENIED_NAMES or name.upper() in DENIED_NAMES:
        return True
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in DENIED_PATTERNS)


@functools.lru_cache(maxsize=4096)
def is_refused_for_a_secret(name: str) -> bool:
    """True when a granted secret may not be put in ``name``: loader and interpreter
    injection names, proxy settings and the sandbox's own variables (secret-shaped
    names are what a secret is for)."""
    upper = name.upper()
    if name in DENIED_NAMES or upper in DENIED_NAMES or upper in SANDBOX_OWN_NAMES:
        return True
    if not name or "=" in name or "\x00" in name:
        return True
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in INJECTION_PATTERNS)


@functools.lru_cache(maxsize=4096)
def is_allowed(name: str) -> bool:
    """True when ``name`` may be copied from the worker's environment."""
    return name in ALLOWED_NAMES or any(
        fnmatch.fnmatchcase(name, pattern) for pattern in ALLOWED_PATTERNS
    )


def build_sandbox_env(
    worker_env: Mapping[str, str],
    additions: Mapping[str, str],
    *,
    path: str,
    home: str,
    tmpdir: str,
    extra_allowed: Iterable[str] = (),
    granted: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Build the environment for one sandboxed command.

    Starts from empty, copies allowlisted names from ``worker_env``, applies the
    tool's ``additions`` and the call's ``granted`` secrets, then forces ``PATH``,
    ``HOME`` and ``TMPDIR`` to the sandbox's own values. Denied names are dropped at
    every step (for ``granted``, only injection names: see `is_refused_for_a_secret`).
    """
    allowed_extra = frozenset(extra_allowed)
    env: dict[str, str] = {}
    for name, value in worker_env.items():
        if (is_allowed(name) or name in allowed_extra) and not is_denied(name):
            env[name] = value
    for name, value in additions.items():
        if is_denied(name) or "=" in name or "\x00" in name or "\x00" in value or not name:
            continue
        env[name] = value
    # Named secrets the agent was granted for this call (secrets_app), by name the
    # call chose: secret-shaped names are the point; injection names never.
    for name, value in (granted or {}).items():
        if is_refused_for_a_secret(name) or "\x00" in value:
            continue
        env[name] = value
    # The sandbox decides these; a tool cannot point them elsewhere.
    env["PATH"] = path
    env["HOME"] = home
    env["TMPDIR"] = tmpdir
    env.setdefault("LANG", "C.UTF-8")
    return env


def denied_names_in(names: Iterable[str]) -> list[str]:
    """The names among ``names`` the denylist removes (for audit messages)."""
    return sorted(name for name in names if is_denied(name))
