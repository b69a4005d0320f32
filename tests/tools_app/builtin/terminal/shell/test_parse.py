"""The command-line parser: what it finds, what it refuses, and what it writes back."""

from __future__ import annotations

import pytest

from tools_app.builtin.terminal.shell.families import program_family
from tools_app.builtin.terminal.shell.parse import (
    ShellSyntaxRefusedError,
    parse_command_line,
    render,
    simple_commands,
)


def programs(line: str) -> list[str]:
    return [c.argv[0] for c in simple_commands(parse_command_line(line))]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ls -la", ["ls"]),
        ("ls | grep x | wc -l", ["ls", "grep", "wc"]),
        ("true && rm -rf x", ["true", "rm"]),
        ("false || rm x", ["false", "rm"]),
        ("echo a; rm b", ["echo", "rm"]),
        ("echo a\nrm b", ["echo", "rm"]),
        ("(rm x)", ["rm"]),
        ("echo ok && (cd sub && (rm y))", ["echo", "cd", "rm"]),
        ("{ echo a; rm b; }", ["echo", "rm"]),
        ("! rm x", ["rm"]),
        ("'r''m' x", ["rm"]),
        ('"rm" x', ["rm"]),
        ("r\\m x", ["rm"]),
        ("ls # rm everything", ["ls"]),
        ("cat < in.txt > out.txt 2>&1", ["cat"]),
    ],
)
def test_every_program_in_a_line_is_found(line: str, expected: list[str]) -> None:
    assert programs(line) == expected


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("$CMD x", "variables"),
        ("${CMD} x", "variables"),
        ("$(echo rm) x", "command substitution"),
        ("`echo rm` x", "backticks"),
        ("echo $(rm x)", "command substitution"),
        ('echo "$(rm x)"', "command substitution"),
        ('echo "`rm x`"', "backticks"),
        ('ls "$HOME"', "variables"),
        ("$'\\x72m' x", "quoting"),
        ("rm x &", "background"),
        ("cat <<EOF\nx\nEOF", "here-documents"),
        ("diff <(ls) <(rm x)", "process substitution"),
        ("ls |& cat", "'|&'"),
        ("ls &> out", "'&>'"),
        ("if true; then rm x; fi", "control structures"),
        ("for f in a; do rm f; done", "control structures"),
        ("while true; do rm x; done", "control structures"),
        ("PATH=/tmp ls", "assignments"),
        ("LD_PRELOAD=x.so ls", "assignments"),
        ("echo 'unterminated", "unterminated"),
        ("(rm x", "not closed"),
        ("ls &&", "nothing after"),
        ("", "empty"),
        ("ls > ", "no target"),
    ],
)
def test_hidden_execution_is_refused(line: str, why: str) -> None:
    with pytest.raises(ShellSyntaxRefusedError) as caught:
        parse_command_line(line)
    assert why in str(caught.value)


def test_literal_dollars_and_quotes_stay_literal() -> None:
    assert programs("echo '$HOME'") == ["echo"]
    parsed = parse_command_line("echo '$HOME' \"a b\" \\$x")
    assert simple_commands(parsed)[0].argv == ("echo", "$HOME", "a b", "$x")


@pytest.mark.parametrize(
    ("line", "rendered"),
    [
        ("ls -la | grep x", "ls -la | grep x"),
        ("echo 'a b' && rm c", "echo 'a b' && rm c"),
        ("echo '$HOME'", "echo '$HOME'"),
        ("ls *.py 'lit*'", "ls *.py 'lit*'"),
        ("(echo a) ; { echo b; }", "( echo a ) ; { echo b; }"),
        ("cat < in > out 2>&1", "cat < in > out 2>&1"),
        ("echo \\;rm", "echo ';rm'"),
    ],
)
def test_render_quotes_every_word_as_checked(line: str, rendered: str) -> None:
    assert render(parse_command_line(line)) == rendered


def test_rendered_lines_parse_back_to_the_same_commands() -> None:
    line = "echo 'a;b' \"c|d\" && ( ls -l ) | grep x ; { cat f; }"
    once = parse_command_line(line)
    again = parse_command_line(render(once))
    assert [c.argv for c in simple_commands(once)] == [c.argv for c in simple_commands(again)]


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("rm", "rm"),
        ("/bin/rm", "rm"),
        ("/usr/bin/rm", "rm"),
        ("python3.11", "python"),
        ("/usr/bin/python3.11", "python"),
        ("python3", "python"),
        ("python", "python"),
        ("pypy3", "python"),
        ("vi", "vim"),
        ("vim.basic", "vim"),
        ("nvim", "vim"),
        ("bash", "sh"),
        ("dash", "sh"),
        ("zsh", "sh"),
        ("nc.openbsd", "nc"),
        ("ncat", "nc"),
        ("netcat", "nc"),
        ("perl5.36", "perl"),
        ("php8.2", "php"),
        ("pip3.11", "pip"),
        ("mawk", "awk"),
        ("doas", "sudo"),
        ("ls", "ls"),
        ("git", "git"),
    ],
)
def test_aliases_fold_to_one_family(name: str, family: str) -> None:
    assert program_family(name) == family
