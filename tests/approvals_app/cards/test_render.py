"""The card renderers (pure): what a person reads first, for each kind of tool."""

from __future__ import annotations

import json

from approvals_app.cards.model import CardInput, CardLimits, CurrentFile
from approvals_app.cards.render import command_line, render_card

WRITE_ORDER = ("path", "content", "overwrite", "create_parents")


def _lines(count: int) -> str:
    return "".join(f"line {n}: some code here\n" for n in range(count))


def test_a_173_line_write_file_shows_its_path_first_and_a_diff_against_the_current_file() -> None:
    current = _lines(170)
    content = current.replace("line 5:", "line five:") + "added 1\nadded 2\nadded 3\n"
    card = render_card(
        CardInput(
            "write_file",
            "file_system",
            # Stored order (as a database may give it): content before path.
            {"content": content, "path": "src/app.py"},
            WRITE_ORDER,
            CurrentFile("read", text=current, size=len(current)),
        )
    )
    assert card.renderer == "write_file"
    assert card.facts[0].label == "path" and card.facts[0].value == "src/app.py"
    assert card.facts[1].label == "size" and "173 lines" in card.facts[1].value
    diff = card.blocks[0]
    assert diff.kind == "diff" and not diff.folded
    added = [line.text for line in diff.lines if line.kind == "add"]
    removed = [line.text for line in diff.lines if line.kind == "del"]
    assert added == ["line five: some code here", "added 1", "added 2", "added 3"]
    assert removed == ["line 5: some code here"]
    # The raw JSON keeps the tool's order: the path comes before the body.
    assert card.raw_json.index('"path"') < card.raw_json.index('"content"')


def test_write_file_of_a_new_file_is_all_additions() -> None:
    card = render_card(
        CardInput(
            "write_file",
            "file_system",
            {"path": "n.txt", "content": "a\nb\n"},
            (),
            CurrentFile("missing"),
        )
    )
    assert [line.kind for line in card.blocks[0].lines if line.kind != "hunk"] == ["add", "add"]
    assert "new file" in card.blocks[0].note


def test_write_file_whose_current_file_cannot_be_read_says_why_and_shows_the_content() -> None:
    unreadable = CurrentFile("unreadable", reason="a part of its path is a symbolic link")
    card = render_card(
        CardInput("write_file", "file_system", {"path": "l", "content": "x"}, (), unreadable)
    )
    assert card.blocks[0].kind == "text" and card.blocks[0].text == "x"
    assert any("symbolic link" in note for note in card.notes)


def test_edit_file_shows_the_edit_as_a_diff_in_the_file() -> None:
    current = "alpha\nbeta\ngamma\n"
    card = render_card(
        CardInput(
            "edit_file",
            "file_system",
            {"path": "f.txt", "old_string": "beta", "new_string": "BETA"},
            (),
            CurrentFile("read", text=current),
        )
    )
    kinds = {(line.kind, line.text) for line in card.blocks[0].lines}
    assert ("del", "beta") in kinds and ("add", "BETA") in kinds and ("ctx", "alpha") in kinds


def test_edit_file_whose_text_is_not_found_says_the_call_would_fail() -> None:
    card = render_card(
        CardInput(
            "edit_file",
            "file_system",
            {"path": "f.txt", "old_string": "nope", "new_string": "x"},
            (),
            CurrentFile("read", text="alpha\n"),
        )
    )
    assert "occurs 0 times" in card.blocks[0].note
    assert {(line.kind, line.text) for line in card.blocks[0].lines} >= {
        ("del", "nope"),
        ("add", "x"),
    }


def test_a_shell_argv_shows_one_quoted_command_line_and_the_cwd() -> None:
    card = render_card(
        CardInput(
            "shell_command", "terminal", {"argv": ["grep", "-r", "two words", "src"], "cwd": "app"}
        )
    )
    assert card.blocks[0].kind == "argv"
    assert card.blocks[0].items == ("grep", "-r", "'two words'", "src")
    assert card.effect.text == "run grep -r 'two words' src in app"
    assert ("cwd", "app") in {(fact.label, fact.value) for fact in card.facts}


def test_a_shell_command_string_is_shown_as_given_and_cwd_defaults_to_the_workspace() -> None:
    card = render_card(CardInput("shell_command", "terminal", {"command": "ls | wc -l"}))
    assert card.blocks[0].text == "ls | wc -l"
    assert card.effect.text == "run the command line ls | wc -l in ."
    assert card.facts[0].value == "."
    assert command_line({"argv": ["a;b"]}) == "'a;b'"


def test_http_request_shows_every_header_exactly_as_sent_and_a_reference_as_a_reference() -> None:
    token = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    card = render_card(
        CardInput(
            "http_request",
            "web",
            {
                "url": "https://example.org/api",
                "method": "POST",
                "headers": {
                    "Authorization": "Basic dXNlcjpwYXNz",
                    "X-Trace": token,
                    "X-Upstream": "Bearer ${secret:UPSTREAM}",
                    "Accept": "application/json",
                },
                "body": '{"q": 1}',
            },
        )
    )
    facts = {(fact.label, fact.value) for fact in card.facts}
    assert ("method", "POST") in facts and ("URL", "https://example.org/api") in facts
    headers = {header.name: header for header in card.blocks[0].headers}
    # Attack: literal values an agent chose to send were masked; they are data it sends.
    assert headers["Authorization"].value == "Basic dXNlcjpwYXNz"
    assert headers["X-Trace"].value == token and not headers["X-Trace"].reference
    # A secret reference is shown as the reference it is (the console adds the value).
    assert headers["X-Upstream"].value == "Bearer ${secret:UPSTREAM}"
    assert headers["X-Upstream"].reference
    # Positive control: a benign header is shown as sent, as before.
    assert headers["Accept"].value == "application/json" and not headers["Accept"].reference
    assert card.blocks[1].label == "body" and card.blocks[1].text == '{"q": 1}'
    for sent in (token, "dXNlcjpwYXNz", "${secret:UPSTREAM}", "application/json"):
        assert sent in card.raw_json and sent in card.effect.text


def test_a_long_http_body_is_previewed_with_its_size() -> None:
    body = "x" * 10_000
    limits = CardLimits(preview_chars=500)
    card = render_card(
        CardInput("http_request", "web", {"url": "https://e.org", "body": body}), limits
    )
    block = card.blocks[0]
    # Its start and its end, never the start alone, with the whole size.
    assert len(block.text) + len(block.tail) == 500 and "9.8 KB" in block.size
    assert "9,500 characters not shown" in block.gap


def test_git_tools_show_the_repository_and_the_operation() -> None:
    card = render_card(
        CardInput("git_commit", "version_control", {"path": "repo", "message": "fix"})
    )
    facts = [(fact.label, fact.value) for fact in card.facts]
    assert facts[:2] == [("repository", "repo"), ("operation", "commit")]
    assert ("message", "fix") in facts


def test_sql_is_tokenised_for_highlighting_with_keywords_apart() -> None:
    query = "SELECT name FROM users WHERE note = 'select <b>x</b>'"
    card = render_card(CardInput("sql_query", "database", {"connection": "main", "query": query}))
    block = card.blocks[0]
    assert block.kind == "sql"
    assert "".join(token.text for token in block.tokens) == query
    assert [t.text for t in block.tokens if t.keyword] == ["SELECT", "FROM", "WHERE"]
    assert ("statement", "SELECT") in {(f.label, f.value) for f in card.facts}


def test_mcp_tools_show_server_tool_and_arguments_as_json_in_their_order() -> None:
    arguments = {"zeta": 1, "alpha": {"b": 2, "a": 1}}
    card = render_card(CardInput("github__create_issue", "mcp", arguments))
    assert card.renderer == "mcp"
    assert [(f.label, f.value) for f in card.facts] == [
        ("server", "github"),
        ("tool", "create_issue"),
    ]
    assert card.blocks[0].text == json.dumps(arguments, indent=2)


def test_other_tools_are_pretty_json_in_insertion_order_never_sorted() -> None:
    arguments = {"zeta": 1, "alpha": 2, "mid": [1, 2]}
    card = render_card(CardInput("test_echo", "testing", arguments))
    assert card.renderer == "generic"
    assert list(json.loads(card.blocks[0].text)) == ["zeta", "alpha", "mid"]


def test_long_values_are_folded_with_their_size_and_short_ones_are_not() -> None:
    limits = CardLimits(fold_chars=100, fold_lines=10)
    long_card = render_card(CardInput("test_echo", "testing", {"text": "y" * 500}), limits)
    short_card = render_card(CardInput("test_echo", "testing", {"text": "y"}), limits)
    assert long_card.blocks[0].folded and "B · " in long_card.blocks[0].size
    assert not short_card.blocks[0].folded


def test_arguments_of_an_unexpected_shape_fall_back_to_json() -> None:
    card = render_card(CardInput("shell_command", "terminal", {"argv": "not a list", "cwd": 3}))
    assert card.blocks  # never an empty card
    assert '"not a list"' in card.raw_json
