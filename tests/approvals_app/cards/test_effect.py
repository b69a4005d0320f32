"""The card's first line: the effect of the call as the policy resolved it (pure)."""

from __future__ import annotations

from approvals_app.cards.model import CardInput, CardLimits, CurrentFile
from approvals_app.cards.render import render_card

ROOTS = ("/srv/ws/agent",)
FILES = {"path": "path"}


def _write(path: str, content: str = "x\n") -> CardInput:
    return CardInput(
        "write_file", "file_system", {"path": path, "content": content},
        ("path", "content"), CurrentFile("missing"), FILES, ROOTS,
    )  # fmt: skip


def test_a_path_padded_with_dot_segments_shows_the_file_it_writes_first() -> None:
    given = "notes.txt/" + "./" * 160 + "../.git/config"
    card = render_card(_write(given))
    assert card.effect.text == "write 2 B · 1 line to .git/config"
    assert card.effect.head == card.effect.text and not card.effect.cut
    assert any("resolves to .git/config" in note for note in card.effect.notes)
    facts = {fact.label: fact.value for fact in card.facts}
    assert facts["resolves to"] == ".git/config"
    # The path as given keeps its end even when its middle is cut.
    assert facts["path"].endswith("../.git/config") and "not shown" in facts["path"]


def test_control_an_ordinary_path_reads_as_itself_with_no_notes() -> None:
    card = render_card(_write("notes/today.md"))
    assert card.effect.text == "write 2 B · 1 line to notes/today.md"
    assert card.effect.notes == ()
    assert [fact.label for fact in card.facts] == ["path", "size"]


def test_an_absolute_path_in_the_workspace_reads_relative_and_one_outside_stays_absolute() -> None:
    assert render_card(_write("/srv/ws/agent/a/b.txt")).effect.text.endswith(" to a/b.txt")
    outside = render_card(_write("/etc/cron.d/job"))
    assert outside.effect.text.endswith(" to /etc/cron.d/job")


def test_line_breaks_inside_an_argument_stay_inside_its_quotes_and_the_tail_is_shown() -> None:
    argv = ["git", "commit", "-m", "fix" + "\n" * 40 + "done", "--amend", "--author=Mallory <m@x>"]
    card = render_card(
        CardInput("shell_command", "terminal", {"argv": argv}, (), None, {"cwd": "path"}, ROOTS)
    )
    line = card.effect.text
    assert line.startswith("run git commit -m 'fix\n") and line.endswith(
        "done' --amend '--author=Mallory <m@x>' in ."
    )
    assert card.blocks[0].items[-2:] == ("--amend", "'--author=Mallory <m@x>'")
    (flagged,) = card.flagged
    assert flagged.where == "argv[3]" and flagged.flags[0].kind == "line_break"


def test_a_long_effect_line_loses_its_middle_never_its_end_and_says_its_size() -> None:
    argv = ["echo", "a" * 5000, "--and-then-this"]
    card = render_card(
        CardInput("shell_command", "terminal", {"argv": argv}), CardLimits(effect_chars=200)
    )
    effect = card.effect
    assert effect.head.startswith("run echo aaa") and effect.tail.endswith("--and-then-this in .")
    assert len(effect.head) + len(effect.tail) == 200
    assert "4,830 characters not shown" in effect.cut and "4.9 KB" in effect.cut


def test_a_url_shows_its_host_port_and_the_address_of_an_ip_literal_in_any_notation() -> None:
    card = render_card(
        CardInput("http_request", "web", {"url": "http://0x7f.1:8080/x", "method": "get"},
                  (), None, {"url": "url"}, ROOTS)
    )  # fmt: skip
    assert card.effect.text.startswith(
        "GET http://127.0.0.1:8080/x (host 127.0.0.1, port 8080, address 127.0.0.1)"
    )
    assert "as given: http://0x7f.1:8080/x" in card.effect.notes
    named = render_card(CardInput("http_request", "web", {"url": "https://Docs.Example.ORG./a"}))
    assert "host docs.example.org, port 443, address looked up when it runs" in named.effect.text


def test_sql_shows_each_statement_kind_and_the_statement_itself() -> None:
    query = "delete from orders where id = 3; drop table audit"
    card = render_card(CardInput("db_mutate", "database", {"connection": "main", "query": query}))
    assert card.effect.text == f'DELETE, DROP on connection "main": {query}'


def test_other_tools_show_every_argument_paths_resolved_by_their_role() -> None:
    card = render_card(
        CardInput("test_echo", "testing", {"text": "hi", "target": "a/../b"}, (), None,
                  {"target": "path"}, ROOTS)
    )  # fmt: skip
    assert card.effect.text == 'test_echo text="hi" target=b'
