"""PURE: what a command line does, read for its risk (``shell_command``).

Each program of a call is read from its argv, or from every simple command of a
command line, through the wrappers that start another program (``env``, ``timeout``,
``nice``, ``xargs``, ``sh -c``). What a program does is known for common ones
(``du`` reads, ``rm`` deletes, ``git push --force`` rewrites a remote); any other
runs code whose effect the card cannot see.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from typing import Final

from approvals_app.policy.risk_words import CRITICAL, HIGH, LOW, MEDIUM, RiskReason
from common.vocabulary.programs import program_family
from tools_app.builtin.terminal.shell.parse import (
    ShellSyntaxRefusedError,
    parse_command_line,
    simple_commands,
)

# Programs that only read (and write to their standard output).
_READER_NAMES: Final = """
    ls du df cat head tail wc grep rg ag find stat file pwd echo printf date true false
    sort uniq cut tr diff cmp md5sum sha1sum sha256sum tree basename dirname realpath
    readlink which whoami id uname test expr seq jq yq less more nl od hexdump column
"""
READERS: Final = frozenset(_READER_NAMES.split())
# Wrappers that run the program named after their own options.
WRAPPERS: Final = frozenset({"env", "timeout", "nice", "nohup", "xargs", "time", "stdbuf"})
NETWORK: Final = frozenset({"curl", "wget", "nc", "ssh", "scp", "rsync", "ftp", "telnet"})
PRIVILEGE: Final = frozenset({"sudo", "chmod", "chown", "chgrp", "setfacl", "chattr", "mount"})
INTERPRETERS: Final = frozenset({"python", "node", "perl", "ruby", "php", "lua", "sh", "awk"})
# git subcommands that only read.
GIT_READS: Final = frozenset(
    {"status", "log", "diff", "show", "blame", "grep", "ls-files", "rev-parse", "describe"}
)
DEVICE_TARGETS: Final = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_WHOLE: Final = frozenset({".", "./", "/", "*", "~", "..", "$HOME", "./*"})
_MAX_DEPTH: Final = 3


def _without_wrappers(argv: Sequence[str]) -> Sequence[str]:
    words = list(argv)
    while words and program_family(words[0]) in WRAPPERS:
        words = words[1:]
        while words and (words[0].startswith("-") or "=" in words[0] or words[0][:1].isdigit()):
            words = words[1:]
    return words


def _flags(words: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for word in words:
        if word.startswith("--"):
            found.add(word.split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1:
            found.update(f"-{letter}" for letter in word[1:])
    return found


def _git(words: Sequence[str]) -> Iterator[RiskReason]:
    sub = next((w for w in words[1:] if not w.startswith("-")), "")
    flags = _flags(words[1:])
    if sub in GIT_READS:
        yield RiskReason(LOW, f"git {sub} only reads the repository")
    elif sub == "push":
        forced = flags & {"--force", "-f", "--force-with-lease", "--mirror", "--delete"}
        forced |= {w for w in words if w.startswith("+") or w.startswith(":")}
        if forced:
            yield RiskReason(CRITICAL, "git push rewrites or deletes what a remote holds")
        else:
            yield RiskReason(HIGH, "git push publishes commits to a remote")
    elif sub in ("reset", "clean", "checkout", "restore", "stash") and (
        flags & {"--hard", "-f", "--force", "-d", "-x"} or sub == "restore" or "--" in words
    ):
        yield RiskReason(HIGH, f"git {sub} discards work that is not committed")
    elif sub == "commit" and flags & {"--amend"}:
        yield RiskReason(MEDIUM, "git commit --amend rewrites the last commit")
    else:
        yield RiskReason(MEDIUM, f"git {sub or '(no command)'} changes the repository")
    authors = [w for w in words if w.startswith("--author")]
    if authors:
        yield RiskReason(MEDIUM, f"records the commit as another author ({authors[0]})")


def _one(argv: Sequence[str], depth: int) -> Iterator[RiskReason]:
    words = _without_wrappers(argv)
    if not words:
        return
    family = program_family(words[0])
    name = posixpath.basename(words[0])
    if family == "sh" and "-c" in words[1:] and depth < _MAX_DEPTH:
        index = words.index("-c")
        if index + 1 < len(words):
            yield from command_reasons(words[index + 1], depth + 1)
            return
    if family in READERS:
        yield RiskReason(LOW, f"{name} only reads")
    elif family == "rm" or (family == "find" and "-delete" in words):
        targets = {w for w in words[1:] if not w.startswith("-")}
        flags = _flags(words[1:])
        if targets & _WHOLE and flags & {"-r", "-R", "--recursive"}:
            whole = ", ".join(sorted(targets & _WHOLE))
            yield RiskReason(CRITICAL, f"{name} deletes a whole tree ({whole})")
        else:
            yield RiskReason(HIGH, f"{name} deletes files")
    elif family in ("mv", "cp", "dd", "truncate", "shred", "tee", "ln", "install"):
        yield RiskReason(MEDIUM, f"{name} may overwrite files")
    elif family == "git":
        yield from _git(words)
    elif family in PRIVILEGE:
        yield RiskReason(HIGH, f"{name} changes permissions or runs with other rights")
    elif family in NETWORK:
        yield RiskReason(HIGH, f"{name} sends or fetches data over the network")
    elif family in INTERPRETERS:
        yield RiskReason(MEDIUM, f"{name} runs a program whose effect the card cannot show")
    else:
        yield RiskReason(MEDIUM, f"runs {name}, whose effect the card cannot show")


def argv_reasons(argv: Sequence[str], depth: int = 0) -> list[RiskReason]:
    """Reasons for one program and its arguments."""
    return list(_one([str(word) for word in argv], depth))


def command_reasons(line: str, depth: int = 0) -> list[RiskReason]:
    """Reasons for every command of a command line (one reason when it cannot be read)."""
    try:
        commands = simple_commands(parse_command_line(line))
    except (ShellSyntaxRefusedError, ValueError):
        return [RiskReason(MEDIUM, "the command line cannot be read; the tool will refuse it")]
    reasons: list[RiskReason] = []
    for command in commands:
        reasons.extend(_one(command.argv, depth))
        for redirection in command.redirections:
            target = redirection.target.text
            writes = redirection.op.lstrip("&").startswith(">") and redirection.op != ">&"
            if writes and target not in DEVICE_TARGETS:
                reasons.append(RiskReason(MEDIUM, f"writes its output into {target}"))
    return reasons
