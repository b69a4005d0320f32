"""Which argument values are traced, how they are found in earlier results, and the note."""

from __future__ import annotations

from approvals_app.cards.provenance import (
    MAX_VALUES,
    EarlierResult,
    argument_values,
    note_text,
    provenance_notes,
    target_of,
)

URL = "http://127.0.0.1:8123/next/report-7f3a"


def test_whole_values_urls_and_paths_inside_longer_ones_short_ones_left_out() -> None:
    values = argument_values(
        {
            "url": URL,
            "method": "GET",
            "headers": {"X-Trace": "short"},
            "argv": ["curl", "-o", "reports/today.csv", URL],
            "command": f"curl -s {URL} | tee out/copy.txt",
        }
    )
    assert ("url", URL) in values
    assert ("argv[2]", "reports/today.csv") in values
    assert ("command", "out/copy.txt") in values
    # Short values (GET, curl, -o, short) are not traced; a value is listed once.
    assert not any(value in ("GET", "curl", "-o", "short") for _, value in values)
    assert [value for _, value in values].count(URL) == 1


def test_the_values_traced_are_bounded() -> None:
    values = argument_values({"argv": [f"value-number-{n}" for n in range(200)]})
    assert len(values) == MAX_VALUES


def test_the_newest_result_holding_the_value_is_named_with_its_distance() -> None:
    earlier = [
        EarlierResult("write_file", {"path": "a.txt"}, "written"),
        EarlierResult("read_file", {"path": "links.md"}, f"see {URL}"),
        EarlierResult("http_request", {"url": "http://127.0.0.1:9/start"}, f"go {URL}"),
    ]
    (note,) = provenance_notes({"url": URL}, earlier)
    assert (note.tool, note.calls_earlier, note.target) == ("read_file", 2, "on path links.md")
    assert note_text(note) == (
        f"this URL '{URL}' (url) appeared in the output of read_file on path links.md, "
        "two calls earlier"
    )


def test_a_value_escaped_inside_json_text_is_found() -> None:
    path = 'notes/"quoted"/file.txt'
    earlier = [
        EarlierResult(
            "list_directory", {"path": "."}, '{"entries": ["notes/\\"quoted\\"/file.txt"]}'
        )
    ]
    (note,) = provenance_notes({"path": path}, earlier)
    assert note.calls_earlier == 1
    assert note_text(note).startswith("this path ")
    assert note_text(note).endswith("the call just before this one")


def test_a_value_in_no_earlier_result_has_no_note() -> None:
    earlier = [EarlierResult("http_request", {"url": "http://127.0.0.1:9/"}, "nothing here")]
    assert provenance_notes({"url": URL}, earlier) == []
    # The control: the same value, once in the output, is noted.
    seen = [EarlierResult("http_request", {"url": "http://127.0.0.1:9/"}, f"x {URL} y")]
    assert len(provenance_notes({"url": URL}, seen)) == 1


def test_targets_and_far_distances() -> None:
    assert target_of("http_request", {"url": "https://127.0.0.1:8443/x"}) == "to host 127.0.0.1"
    assert target_of("shell_command", {"argv": ["cat", "x"]}) == "running cat"
    assert target_of("db_query", {"connection": "shop"}) == "on connection shop"
    assert target_of("test_echo", {"text": "hi"}) == ""
    earlier = [EarlierResult("test_echo", {}, "") for _ in range(11)]
    earlier.append(EarlierResult("test_echo", {"text": "hi"}, URL))
    (note,) = provenance_notes({"url": URL}, earlier)
    assert note_text(note).endswith("output of test_echo, 12 calls earlier")
