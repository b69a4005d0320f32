"""PURE: what a wrapper program would run, read from its arguments.

``env``, ``nice``, ``timeout``, ``nohup``, ``stdbuf``, ``time``, ``command``,
``exec``, ``xargs``, ``setsid``, ``ionice``, ``taskset``, ``busybox`` and
``find -exec`` run another program named in their arguments; shells run the
string after ``-c``; interpreters run inline code after ``-c``/``-e``. Options
that hide what would run (``env -S``, ``env PATH=…`` and any variable but a
few locale and display ones) are refused.
"""

from __future__ import annotations

import re
from typing import Final


class CommandRefusedError(Exception):
    """A program, or a program it would run, is not allowed; ``reason`` says which and why,
    ``families`` the program families refused (empty when no one program was)."""

    def __init__(self, reason: str, *, families: frozenset[str] = frozenset()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.families = families


# Interpreter families and the options that take inline code.
INLINE_CODE_OPTIONS: Final = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "php": ("-r",),
    "lua": ("-e",),
}
# Their options that take a separate value (which must not end the option scan).
INTERPRETER_VALUE_OPTIONS: Final = {
    "python": frozenset({"-W", "-X", "--check-hash-based-pycs"}),
    "perl": frozenset({"-I", "-M", "-m", "-x"}),
    "ruby": frozenset({"-I", "-r", "-E", "--encoding"}),
    "node": frozenset({"-r", "--require", "--import", "--loader", "-C", "--conditions"}),
    "php": frozenset({"-c", "-d", "-z"}),
    "lua": frozenset({"-l"}),
}


def inline_code(family: str, args: list[str]) -> bool:
    """True when an interpreter is handed code on its command line."""
    options = INLINE_CODE_OPTIONS.get(family, ())
    short = "".join(o[1] for o in options if len(o) == 2)
    long = tuple(o for o in options if o.startswith("--"))
    with_value = INTERPRETER_VALUE_OPTIONS.get(family, frozenset())
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return False  # a script or module name: its own arguments follow
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if name in long:
                return True
            skip_next = name in with_value and "=" not in arg
            continue
        letters = re.match(r"-([A-Za-z]*)", arg)
        if short and letters and any(c in short for c in letters.group(1)):
            return True
        skip_next = arg in with_value
    return False


def shell_command_strings(args: list[str]) -> list[str]:
    """Command strings a shell would run: the word after any ``-c`` (also ``-ec``, ``-lc``).

    Every option cluster holding ``c`` counts, wherever it stands, so an
    unknown option that takes a value cannot hide a ``-c`` behind it.
    """
    strings: list[str] = []
    for index, arg in enumerate(args):
        if re.fullmatch(r"-[A-Za-z]*c[A-Za-z]*", arg):
            rest = [a for a in args[index + 1 :] if not a.startswith("-")]
            if not rest:
                raise CommandRefusedError("'-c' without a command string")
            strings.append(rest[0])
    return strings


# -- wrappers ------------------------------------------------------------------------

# Options that take a value, per wrapper, and flags that do not.
_WITH_VALUE: Final = {
    "env": {"-u", "--unset", "-C", "--chdir"},
    "nice": {"-n", "--adjustment"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "stdbuf": {"-i", "-o", "-e", "--input", "--output", "--error"},
    "time": {"-f", "--format", "-o", "--output"},
    "xargs": {
        "-a",
        "--arg-file",
        "-d",
        "--delimiter",
        "-E",
        "-e",
        "--eof",
        "-I",
        "--replace",
        "-L",
        "--max-lines",
        "-n",
        "--max-args",
        "-P",
        "--max-procs",
        "-s",
        "--max-chars",
        "--process-slot-var",
    },
    "ionice": {"-c", "--class", "-n", "--classdata"},
    "taskset": {"-c", "--cpu-list"},
    "exec": {"-a"},
}
_REFUSED_OPTIONS: Final = {
    "env": {"-S", "--split-string", "-P", "--default-signal", "--ignore-signal", "--block-signal"},
    "taskset": {"-p", "--pid"},
    "ionice": {"-p", "--pid", "-P", "--pgid", "-u", "--uid"},
}
_SIMPLE_WRAPPERS: Final = frozenset(
    {"env", "nice", "nohup", "stdbuf", "time", "command", "exec", "builtin", "setsid"}
    | {"timeout", "xargs", "ionice", "taskset", "unbuffer"}
)
_POSITIONAL_BEFORE_COMMAND: Final = {"timeout": 1, "taskset": 1}
# Variables ``env NAME=VALUE`` may set (and LC_*): many others name a program to run.
ENV_SETTABLE: Final = frozenset(
    {"LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR"}
)


def _strip_options(family: str, args: list[str]) -> list[str]:
    """``args`` after the wrapper's own options (and positional values it takes first)."""
    with_value = _WITH_VALUE.get(family, set())
    refused = _REFUSED_OPTIONS.get(family, set())
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        name = arg.split("=", 1)[0]
        short = arg[:2]
        if name in refused or short in refused:
            raise CommandRefusedError(f"{family} {arg!r} is refused: it hides what would run")
        if family == "command" and arg in ("-v", "-V"):
            return []  # only looks the name up
        if family == "nice" and arg[1:].isdigit():
            index += 1
            continue
        if name in with_value and "=" not in arg:
            index += 2
            continue
        if short in with_value and len(arg) > 2:
            index += 1  # value attached: -n10, -uNAME
            continue
        index += 1
    rest = args[index:]
    if family == "env":
        while rest and "=" in rest[0] and not rest[0].startswith("="):
            name = rest[0].split("=", 1)[0]
            if name not in ENV_SETTABLE and not name.startswith("LC_"):
                raise CommandRefusedError(
                    f"env {name}=… is refused: it can change what would run (PATH, PAGER, "
                    "LESSOPEN, BASH_ENV, GIT_*, TAR_OPTIONS… name programs); only locale, "
                    f"time-zone and display variables can be set: {', '.join(sorted(ENV_SETTABLE))}"
                )
            rest = rest[1:]
    skip = _POSITIONAL_BEFORE_COMMAND.get(family, 0)
    return rest[skip:]


def _find_exec_commands(args: list[str]) -> list[list[str]]:
    commands: list[list[str]] = []
    index = 0
    while index < len(args):
        if args[index] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            commands.append(args[index + 1 : end])
            index = end
        index += 1
    return commands


def wrapped_commands(family: str, args: list[str]) -> list[list[str]]:
    """The commands a wrapper program would run with ``args``."""
    if family in ("busybox", "toybox"):
        return [args] if args else []
    if family == "find":
        commands = _find_exec_commands(args)
        if any(not c for c in commands):
            raise CommandRefusedError("find -exec without a command")
        return commands
    if family not in _SIMPLE_WRAPPERS:
        return []
    rest = _strip_options(family, args)
    if family == "xargs":
        return [rest or ["echo"]]
    return [rest] if rest else []
