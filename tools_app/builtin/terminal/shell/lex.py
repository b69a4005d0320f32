"""PURE: split a command line into words, operators and redirections (see ``shell_parse``).

Quoting is tracked per character so globs stay active only where the line
left them unquoted; anything that would expand or substitute is refused here,
before a grammar ever sees it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

GLOB_CHARACTERS: Final = frozenset("*?")
_NAME_START: Final = re.compile(r"[A-Za-z_0-9@*#?$!\-{(]")
_OPERATOR_CHARS: Final = frozenset("|&;()<>")


class ShellSyntaxRefusedError(ValueError):
    """The command line uses refused or unparsable syntax; the message says what.

    ``hides_program`` is True when the syntax could run something unchecked
    (substitution, variables, control structures…), False when it is malformed.
    """

    def __init__(self, message: str, *, hides_program: bool = False) -> None:
        super().__init__(message)
        self.hides_program = hides_program


@dataclass(frozen=True, slots=True)
class Word:
    """One word: its text, and which characters were unquoted (for globbing)."""

    text: str
    unquoted: tuple[bool, ...]

    @property
    def has_glob(self) -> bool:
        """True when an unquoted ``*`` or ``?`` would be expanded by the shell."""
        return any(
            u and c in GLOB_CHARACTERS for c, u in zip(self.text, self.unquoted, strict=True)
        )

    def render(self, *, allow_glob: bool) -> str:
        """The word quoted for ``sh``; unquoted globs stay active only when allowed."""
        if not allow_glob or not self.has_glob:
            return shlex.quote(self.text)
        out: list[str] = []
        run = ""
        for char, unquoted in zip(self.text, self.unquoted, strict=True):
            if unquoted and char in GLOB_CHARACTERS:
                if run:
                    out.append(shlex.quote(run))
                    run = ""
                out.append(char)
            else:
                run += char
        if run:
            out.append(shlex.quote(run))
        return "".join(out)


@dataclass(frozen=True, slots=True)
class Redirection:
    """``[fd]op target``; ``target`` is a file word, or a descriptor for ``>&``/``<&``."""

    fd: int | None
    op: str
    target: Word


@dataclass(frozen=True, slots=True)
class Op:
    """An operator: ``|``, ``&&``, ``||``, ``;``, ``(`` or ``)``."""

    value: str


Token = Word | Op | Redirection


class Lexer:
    """Turns one command line into tokens, refusing what would run unseen."""

    def __init__(self, line: str) -> None:
        self.s = line
        self.i = 0

    def refuse(self, why: str, *, hides_program: bool = False) -> ShellSyntaxRefusedError:
        return ShellSyntaxRefusedError(why, hides_program=hides_program)

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        while True:
            token = self.next_token(out)
            if token is None:
                return out
            out.append(token)

    def next_token(self, previous: list[Token]) -> Token | None:
        s = self.s
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        if self.i >= len(s):
            return None
        ch = s[self.i]
        if ch == "#":
            while self.i < len(s) and s[self.i] != "\n":
                self.i += 1
            return self.next_token(previous)
        if ch == "\n":
            self.i += 1
            return Op(";")
        if ch in _OPERATOR_CHARS:
            return self.operator(None)
        if ch.isdigit():
            j = self.i
            while j < len(s) and s[j].isdigit():
                j += 1
            if j < len(s) and s[j] in "<>":
                fd = int(s[self.i : j])
                self.i = j
                return self.operator(fd)
        return self.word()

    def operator(self, fd: int | None) -> Token:
        s, i = self.s, self.i
        two = s[i : i + 2]
        if two in ("&&", "||", ";;", "|&", "&>", "<<", "<(", ">(", "<>", ">|"):
            if two in ("&&", "||"):
                self.i += 2
                return Op(two)
            why = {
                ";;": "';;' belongs to case statements, which are not supported",
                "|&": "'|&' is not supported; write 2>&1 |",
                "&>": "'&>' is not supported; write > file 2>&1",
                "<<": "here-documents are not supported; pass input with stdin",
                "<(": "process substitution runs a hidden command and is refused",
                ">(": "process substitution runs a hidden command and is refused",
                "<>": "'<>' redirection is not supported",
                ">|": "'>|' redirection is not supported",
            }[two]
            raise self.refuse(why, hides_program=True)
        ch = s[i]
        if ch == "&":
            raise self.refuse(
                "background jobs ('&') are not supported; run commands in turn", hides_program=True
            )
        if ch in "|;()":
            if fd is not None:
                raise self.refuse(f"unexpected {ch!r} after a descriptor number")
            self.i += 1
            return Op(ch)
        # Redirection: <, >, >>, >&N, <&N
        op = ">>" if two == ">>" else ch
        self.i += len(op)
        if self.i < len(s) and s[self.i] == "&":
            self.i += 1
            j = self.i
            while j < len(s) and s[j].isdigit():
                j += 1
            if j == self.i or (j < len(s) and s[j] not in " \t\n;|&()<>"):
                raise self.refuse("only descriptor numbers may follow '>&' or '<&'")
            target = s[self.i : j]
            self.i = j
            return Redirection(fd, op + "&", Word(target, (False,) * len(target)))
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        if self.i >= len(s) or s[self.i] in "\n;|&()<>":
            raise self.refuse(f"redirection {op!r} has no target")
        target_word = self.word()
        return Redirection(fd, op, target_word)

    def expansion(self, quoted: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if nxt == "(":
            raise self.refuse(
                "command substitution '$(…)' is refused; run the command separately",
                hides_program=True,
            )
        if nxt in ("'", '"') and not quoted:
            raise self.refuse(f"'${nxt}…' quoting is not supported", hides_program=True)
        if nxt and _NAME_START.match(nxt):
            raise self.refuse(
                "variables ('$NAME', '${…}') are not expanded; write the value itself",
                hides_program=True,
            )

    def word(self) -> Word:
        s = self.s
        text: list[str] = []
        unquoted: list[bool] = []

        def add(char: str, free: bool) -> None:
            text.append(char)
            unquoted.append(free)

        while self.i < len(s):
            ch = s[self.i]
            if ch in " \t\n" or ch in _OPERATOR_CHARS:
                break
            if ch == "\\":
                if self.i + 1 >= len(s):
                    raise self.refuse("a trailing backslash escapes nothing")
                if s[self.i + 1] != "\n":
                    add(s[self.i + 1], False)
                self.i += 2
            elif ch == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise self.refuse("unterminated single quote")
                for c in s[self.i + 1 : end]:
                    add(c, False)
                self.i = end + 1
            elif ch == '"':
                self.double_quoted(add)
            elif ch == "`":
                raise self.refuse("command substitution (backticks) is refused", hides_program=True)
            elif ch == "$":
                self.expansion(quoted=False)
                add(ch, True)
                self.i += 1
            else:
                add(ch, True)
                self.i += 1
        return Word("".join(text), tuple(unquoted))

    def double_quoted(self, add: Callable[[str, bool], None]) -> None:
        s = self.s
        self.i += 1
        while True:
            if self.i >= len(s):
                raise self.refuse("unterminated double quote")
            ch = s[self.i]
            if ch == '"':
                self.i += 1
                return
            if ch == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    add(s[self.i + 1], False)
                self.i += 2
                continue
            if ch == "`":
                raise self.refuse("command substitution (backticks) is refused", hides_program=True)
            if ch == "$":
                self.expansion(quoted=True)
            add(ch, False)
            self.i += 1
