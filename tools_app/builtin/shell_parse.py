"""PURE: parse a command line into the commands it would run, and write it back safely.

A small POSIX-shell subset: words with single quotes, double quotes and
backslashes; pipelines ``|``; lists ``;``, ``&&``, ``||`` and newlines; negation
``!``; subshells ``( … )``; groups ``{ …; }``; redirections ``<``, ``>``, ``>>``
(optionally with a file descriptor) and descriptor duplication ``2>&1``.

Everything else a shell could use to run something unseen is refused with the
reason: command substitution (``$(…)``, backticks) and parameter expansion
(``$VAR``, ``${…}``) anywhere, ``$'…'`` and ``$"…"`` quoting, background ``&``,
here-documents, process substitution, ``|&`` and ``&>``, control structures
(``if``, ``for``, ``while``, ``case``, functions), and assignments before a
command (``PATH=… cmd``).

``render`` writes the parsed commands back with every word quoted, so the
shell that runs the line sees exactly the words that were checked; only
unquoted ``*`` and ``?`` in arguments stay active as globs.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

GLOB_CHARACTERS: Final = frozenset("*?")
_NAME_START: Final = re.compile(r"[A-Za-z_0-9@*#?$!\-{(]")
_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_CONTROL_WORDS: Final = frozenset(
    {
        "if",
        "then",
        "elif",
        "else",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "select",
        "function",
        "[[",
        "]]",
        "coproc",
    }
)
_OPERATOR_CHARS: Final = frozenset("|&;()<>")
MAX_NESTING: Final = 16


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
class SimpleCommand:
    """A program and its arguments, with its redirections."""

    words: tuple[Word, ...]
    redirections: tuple[Redirection, ...] = ()

    @property
    def argv(self) -> tuple[str, ...]:
        """The words as plain strings."""
        return tuple(w.text for w in self.words)


@dataclass(frozen=True, slots=True)
class Compound:
    """A subshell ``( … )`` or group ``{ …; }`` holding a list."""

    kind: str  # "(" or "{"
    body: CommandList


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Commands joined by ``|``, optionally negated with ``!``."""

    commands: tuple[SimpleCommand | Compound, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class CommandList:
    """Pipelines joined by ``;``, ``&&`` or ``||`` (``joiners[i]`` precedes ``items[i+1]``)."""

    items: tuple[Pipeline, ...]
    joiners: tuple[str, ...] = field(default=())


# -- tokens ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Op:
    value: str


_Token = Word | _Op | Redirection


class _Lexer:
    def __init__(self, line: str) -> None:
        self.s = line
        self.i = 0

    def refuse(self, why: str, *, hides_program: bool = False) -> ShellSyntaxRefusedError:
        return ShellSyntaxRefusedError(why, hides_program=hides_program)

    def tokens(self) -> list[_Token]:
        out: list[_Token] = []
        while True:
            token = self.next_token(out)
            if token is None:
                return out
            out.append(token)

    def next_token(self, previous: list[_Token]) -> _Token | None:
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
            return _Op(";")
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

    def operator(self, fd: int | None) -> _Token:
        s, i = self.s, self.i
        two = s[i : i + 2]
        if two in ("&&", "||", ";;", "|&", "&>", "<<", "<(", ">(", "<>", ">|"):
            if two in ("&&", "||"):
                self.i += 2
                return _Op(two)
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
            return _Op(ch)
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


# -- grammar ---------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def is_op(self, value: str) -> bool:
        token = self.peek()
        return isinstance(token, _Op) and token.value == value

    def parse_list(self, closer: str | None) -> CommandList:
        items: list[Pipeline] = []
        joiners: list[str] = []
        while True:
            while self.is_op(";") and not items:
                self.pos += 1
            if self.at_end(closer):
                break
            items.append(self.parse_pipeline(closer))
            token = self.peek()
            if isinstance(token, _Op) and token.value in (";", "&&", "||"):
                self.pos += 1
                while token.value == ";" and self.is_op(";"):
                    self.pos += 1
                if self.at_end(closer):
                    if token.value != ";":
                        raise ShellSyntaxRefusedError(f"{token.value!r} has nothing after it")
                    break
                joiners.append(token.value)
                continue
            break
        if not items:
            raise ShellSyntaxRefusedError("empty command")
        return CommandList(tuple(items), tuple(joiners))

    def at_end(self, closer: str | None) -> bool:
        token = self.peek()
        if token is None:
            return True
        if closer == ")" and isinstance(token, _Op) and token.value == ")":
            return True
        return closer == "}" and _is_bare(token, "}")

    def parse_pipeline(self, closer: str | None) -> Pipeline:
        negated = False
        if _is_bare(self.peek(), "!"):
            negated = True
            self.pos += 1
        commands = [self.parse_command(closer)]
        while self.is_op("|"):
            self.pos += 1
            commands.append(self.parse_command(closer))
        return Pipeline(tuple(commands), negated)

    def parse_command(self, closer: str | None) -> SimpleCommand | Compound:
        token = self.peek()
        if token is None:
            raise ShellSyntaxRefusedError("a command is missing")
        if (isinstance(token, _Op) and token.value == "(") or _is_bare(token, "{"):
            kind = "(" if isinstance(token, _Op) else "{"
            end = ")" if kind == "(" else "}"
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise ShellSyntaxRefusedError("subshells and groups are nested too deeply")
            self.pos += 1
            body = self.parse_list(end)
            closing = self.peek()
            if kind == "(" and not (isinstance(closing, _Op) and closing.value == ")"):
                raise ShellSyntaxRefusedError("'(' is not closed")
            if kind == "{" and not _is_bare(closing, "}"):
                raise ShellSyntaxRefusedError("'{' is not closed with '; }'")
            self.pos += 1
            self.depth -= 1
            if isinstance(self.peek(), Word | Redirection):
                raise ShellSyntaxRefusedError(f"words after '{end}' are not supported")
            return Compound(kind, body)
        words: list[Word] = []
        redirections: list[Redirection] = []
        while True:
            token = self.peek()
            if isinstance(token, Redirection):
                redirections.append(token)
            elif isinstance(token, Word):
                if closer == "}" and _is_bare(token, "}") and words:
                    # '}' only closes a group after ';'; here it would be an argument.
                    raise ShellSyntaxRefusedError("write '; }' to close a group")
                words.append(token)
            else:
                break
            self.pos += 1
        if not words:
            raise ShellSyntaxRefusedError("a command is missing (only redirections)")
        first = words[0]
        if all(first.unquoted) and first.text in _CONTROL_WORDS:
            raise ShellSyntaxRefusedError(
                f"shell control structures ({first.text!r}) are not supported; run one command "
                "at a time",
                hides_program=True,
            )
        if _ASSIGNMENT.match(first.text) and all(first.unquoted[: first.text.index("=") + 1]):
            raise ShellSyntaxRefusedError(
                f"assignments before a command ({first.text.split('=')[0]}=…) are refused: they "
                "can change which program runs",
                hides_program=True,
            )
        return SimpleCommand(tuple(words), tuple(redirections))


def _is_bare(token: _Token | None, value: str) -> bool:
    """An unquoted word equal to ``value`` (a reserved word such as '{', '}' or '!')."""
    return isinstance(token, Word) and token.text == value and all(token.unquoted)


def parse_command_line(line: str) -> CommandList:
    """Parse ``line``; raise ShellSyntaxRefusedError naming what is refused or malformed."""
    if "\x00" in line:
        raise ShellSyntaxRefusedError("the command line contains a NUL byte")
    parser = _Parser(_Lexer(line).tokens())
    result = parser.parse_list(None)
    if parser.peek() is not None:
        leftover = parser.peek()
        shown = leftover.value if isinstance(leftover, _Op) else "a word"
        raise ShellSyntaxRefusedError(f"unexpected {shown!r}")
    return result


def simple_commands(node: CommandList) -> list[SimpleCommand]:
    """Every simple command in ``node``, in order, however deeply nested."""
    found: list[SimpleCommand] = []
    for pipeline in node.items:
        for command in pipeline.commands:
            if isinstance(command, Compound):
                found.extend(simple_commands(command.body))
            else:
                found.append(command)
    return found


def _render_redirection(redirection: Redirection) -> str:
    fd = "" if redirection.fd is None else str(redirection.fd)
    if redirection.op.endswith("&"):
        return f"{fd}{redirection.op}{redirection.target.text}"
    return f"{fd}{redirection.op} {shlex.quote(redirection.target.text)}"


def render(node: CommandList) -> str:
    """Write ``node`` back as a line for ``sh -c``: every word quoted as it was checked."""
    parts: list[str] = []
    for index, pipeline in enumerate(node.items):
        if index:
            parts.append(f" {node.joiners[index - 1]} ")
        rendered: list[str] = []
        for command in pipeline.commands:
            if isinstance(command, Compound):
                inner = render(command.body)
                rendered.append(f"( {inner} )" if command.kind == "(" else f"{{ {inner}; }}")
            else:
                words = [
                    w.render(allow_glob=position > 0) for position, w in enumerate(command.words)
                ]
                words += [_render_redirection(r) for r in command.redirections]
                rendered.append(" ".join(words))
        parts.append(("! " if pipeline.negated else "") + " | ".join(rendered))
    return "".join(parts)
