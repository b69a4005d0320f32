"""Which programs a command may run: allow and deny lists on the resolved executable.

A program is judged by its family (``shell_families``) under every name it
goes by: the name it was called by and the real file it resolves to, so
``/bin/rm`` is ``rm``, ``python3.11`` is ``python``, and a symlink named ``ls``
pointing at ``rm`` is ``rm``. A deny on any of those names refuses; with an
allowlist every one of them must be allowed. Programs must resolve into the
system directories: a script or link planted in the workspace is refused.

Wrappers that run another program (``env``, ``nice``, ``timeout``, ``nohup``,
``stdbuf``, ``time``, ``command``, ``exec``, ``xargs``, ``setsid``, ``busybox``,
``find -exec``) have the wrapped command checked too; shells with ``-c`` have
their command line parsed and every command in it checked. Programs that
can start others through their options (git, tar, sed, awk, rsync, ssh, man,
less…) have those options refused (``shell_runners``). Privilege
switchers, tracers and interpreters given inline code (``python -c``,
``perl -e``…) are refused: what they would run cannot be checked.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from tools_app.builtin.terminal.shell.families import MULTI_CALL, program_family
from tools_app.builtin.terminal.shell.parse import (
    ShellSyntaxRefusedError,
    parse_command_line,
    simple_commands,
)
from tools_app.builtin.terminal.shell.runners import check_runner
from tools_app.builtin.terminal.shell.wrappers import (
    CommandRefusedError,
    inline_code,
    shell_command_strings,
    wrapped_commands,
)
from tools_app.sandbox.paths import SAFE_PATH_PREFIXES, is_within

__all__ = [
    "CommandRefusedError",
    "ProgramRules",
    "ResolvedProgram",
    "check_argv",
    "check_command_line",
    "resolve_program",
]

DEFAULT_SEARCH_PATH: Final = ("/usr/local/bin", "/usr/bin", "/bin")
MAX_WRAPPER_DEPTH: Final = 8

# Never run, whatever the lists say: they switch user or escape the sandbox's view.
ALWAYS_DENIED_FAMILIES: Final = frozenset(
    {"sudo", "nsenter", "unshare", "chroot", "capsh", "setpriv", "mount", "umount", "docker"}
)
# They run a program given as an argument in ways that cannot be followed here.
REFUSED_WRAPPERS: Final = frozenset(
    {
        "strace",
        "ltrace",
        "gdb",
        "valgrind",
        "watch",
        "script",
        "flock",
        "chrt",
        "parallel",
        "ssh-agent",
        "dbus-run-session",
        "firejail",
        "bwrap",
        "proot",
        "fakeroot",
        "expect",
        "ld.so",
    }
)
# Shell builtins that evaluate text or change how later names resolve.
REFUSED_BUILTINS: Final = frozenset(
    {
        "eval",
        ".",
        "source",
        "trap",
        "alias",
        "unalias",
        "export",
        "set",
        "unset",
        "readonly",
        "local",
        "declare",
        "typeset",
        "hash",
        "enable",
        "shopt",
        "fc",
        "let",
    }
)


@dataclass(frozen=True, slots=True)
class ProgramRules:
    """Allow and deny families and where programs are looked up."""

    allowed: frozenset[str] | None
    """None: no allowlist; otherwise every name of a program must be in it."""
    denied: frozenset[str]
    search_path: tuple[str, ...] = DEFAULT_SEARCH_PATH
    system_dirs: tuple[str, ...] = SAFE_PATH_PREFIXES


@dataclass(frozen=True, slots=True)
class ResolvedProgram:
    """A command word and the executable it stands for."""

    word: str
    path: str | None
    real_path: str | None

    @property
    def families(self) -> frozenset[str]:
        """Every family the program goes by (called name and real file)."""
        called = program_family(self.word)
        if self.real_path is None:
            return frozenset({called})
        real = program_family(self.real_path)
        if real in MULTI_CALL:
            # busybox acts as the name it is called by; calling it directly is a wrapper.
            return frozenset({called})
        return frozenset({called, real})


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def resolve_program(word: str, rules: ProgramRules, cwd: str) -> ResolvedProgram:
    """Find the file ``word`` runs, as the sandbox's PATH lookup would."""
    if not word:
        raise CommandRefusedError("the command is empty")
    if "/" in word:
        path = word if word.startswith("/") else os.path.join(cwd, word)
        if not os.path.lexists(path):
            raise CommandRefusedError(f"{word!r} does not exist")
    else:
        found = next(
            (
                os.path.join(d, word)
                for d in rules.search_path
                if _executable(os.path.join(d, word))
            ),
            None,
        )
        if found is None:
            # Not here: only a builtin or a program the sandbox image alone has; its
            # name is all there is to judge.
            return ResolvedProgram(word, None, None)
        path = found
    real = os.path.realpath(path)
    if not any(
        is_within(real, d) or is_within(real, os.path.realpath(d)) for d in rules.system_dirs
    ):
        raise CommandRefusedError(
            f"{word!r} resolves to {real!r}, outside the system program directories; programs "
            "written into the workspace are not run"
        )
    if not _executable(real):
        raise CommandRefusedError(f"{word!r} is not an executable file")
    return ResolvedProgram(word, path, real)


def _judge(program: ResolvedProgram, rules: ProgramRules) -> None:
    families = program.families
    shown = program.word
    if program.real_path and program_family(program.real_path) != program_family(program.word):
        shown = f"{program.word} (resolves to {program.real_path})"
    for family in sorted(families):
        if family in ALWAYS_DENIED_FAMILIES:
            raise CommandRefusedError(
                f"{shown} is never run in the sandbox ({family!r})", families=families
            )
        if family in rules.denied:
            raise CommandRefusedError(
                f"{shown} is on the deny list (as {family!r})", families=families
            )
    if rules.allowed is not None:
        missing = sorted(families - rules.allowed)
        if missing:
            allowed = ", ".join(sorted(rules.allowed)) or "none"
            raise CommandRefusedError(
                f"{shown} is not on the allow list (as {', '.join(missing)!r}); allowed: {allowed}",
                families=families,
            )


def check_argv(argv: Sequence[str], rules: ProgramRules, cwd: str, depth: int = 0) -> None:
    """Refuse unless ``argv`` and every command it would run are allowed."""
    if depth > MAX_WRAPPER_DEPTH:
        raise CommandRefusedError("commands are wrapped too deeply to check")
    if not argv:
        return
    word = argv[0]
    if word != "[" and (any(c in word for c in "$`*?[") or word.startswith("~")):
        raise CommandRefusedError(
            f"{word!r} is not a program name: variables, substitutions and globs are never "
            "expanded to choose the program"
        )
    if word in REFUSED_BUILTINS:
        raise CommandRefusedError(
            f"the shell builtin {word!r} evaluates text or changes name lookup and is refused"
        )
    program = resolve_program(word, rules, cwd)
    _judge(program, rules)
    family = program_family(word)
    if program.real_path and program_family(program.real_path) not in MULTI_CALL:
        family = program_family(program.real_path)
    if family in REFUSED_WRAPPERS:
        raise CommandRefusedError(f"{word!r} runs programs in a way that cannot be checked")
    check_runner(family, list(argv[1:]), top_level=depth == 0)
    for wrapped in wrapped_commands(family, list(argv[1:])):
        check_argv(wrapped, rules, cwd, depth + 1)
    if family == "sh":
        for line in shell_command_strings(list(argv[1:])):
            check_command_line(line, rules, cwd, depth + 1)
    if inline_code(family, list(argv[1:])):
        raise CommandRefusedError(
            f"inline code for {word!r} cannot be checked against the command lists; use the "
            "code_runner tool"
        )


def check_command_line(line: str, rules: ProgramRules, cwd: str, depth: int = 0) -> None:
    """Parse ``line`` and check every command in it (pipes, lists, subshells, groups)."""
    try:
        parsed = parse_command_line(line)
    except ShellSyntaxRefusedError as exc:
        raise CommandRefusedError(f"command line refused: {exc}") from exc
    for command in simple_commands(parsed):
        first = command.words[0]
        if any(first.unquoted) and first.has_glob:
            raise CommandRefusedError(f"a glob as the program name ({first.text!r}) is refused")
        check_argv(command.argv, rules, cwd, depth)
