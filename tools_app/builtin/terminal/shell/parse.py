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
from dataclasses import dataclass, field
from typing import Final

from tools_app.builtin.terminal.shell.lex import (
    Lexer,
    Op,
    Redirection,
    ShellSyntaxRefusedError,
    Token,
    Word,
)

__all__ = [
    "CommandList",
    "Compound",
    "Pipeline",
    "Redirection",
    "ShellSyntaxRefusedError",
    "SimpleCommand",
    "Word",
    "parse_command_line",
    "render",
    "simple_commands",
]

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
MAX_NESTING: Final = 16


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


# -- grammar ---------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def is_op(self, value: str) -> bool:
        token = self.peek()
        return isinstance(token, Op) and token.value == value

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
            if isinstance(token, Op) and token.value in (";", "&&", "||"):
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
        if closer == ")" and isinstance(token, Op) and token.value == ")":
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
        if (isinstance(token, Op) and token.value == "(") or _is_bare(token, "{"):
            kind = "(" if isinstance(token, Op) else "{"
            end = ")" if kind == "(" else "}"
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise ShellSyntaxRefusedError("subshells and groups are nested too deeply")
            self.pos += 1
            body = self.parse_list(end)
            closing = self.peek()
            if kind == "(" and not (isinstance(closing, Op) and closing.value == ")"):
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


def _is_bare(token: Token | None, value: str) -> bool:
    """An unquoted word equal to ``value`` (a reserved word such as '{', '}' or '!')."""
    return isinstance(token, Word) and token.text == value and all(token.unquoted)


def parse_command_line(line: str) -> CommandList:
    """Parse ``line``; raise ShellSyntaxRefusedError naming what is refused or malformed."""
    if "\x00" in line:
        raise ShellSyntaxRefusedError("the command line contains a NUL byte")
    parser = _Parser(Lexer(line).tokens())
    result = parser.parse_list(None)
    if parser.peek() is not None:
        leftover = parser.peek()
        shown = leftover.value if isinstance(leftover, Op) else "a word"
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
