"""Characters a person cannot see or may misread, flagged where they occur (pure)."""

from __future__ import annotations

from approvals_app.cards.characters import char_flags, escaped, segments


def test_a_cyrillic_o_in_a_file_name_is_flagged_as_a_look_alike_of_o() -> None:
    (flag,) = char_flags("n\u043etes.txt")
    assert (flag.code, flag.kind, flag.looks_like) == ("U+043E", "lookalike", "o")
    assert "CYRILLIC SMALL LETTER O" in flag.describe()
    parts = segments("n\u043etes.txt")
    assert [p.text for p in parts] == ["n", "\u043e", "tes.txt"] and parts[1].flag == flag


def test_control_plain_ascii_names_and_text_have_no_flags() -> None:
    for text in ("notes.txt", "src/app.py", "git commit -m 'fix the build'"):
        assert char_flags(text) == () and segments(text)[0].text == text
    assert char_flags("line one\n\tline two\n", "block") == ()


def test_invisible_and_bidi_characters_and_odd_spaces_are_flagged_by_their_escape() -> None:
    text = "rm\u200b -rf\u00a0x \u202eevil"
    flags = {flag.code: flag for flag in char_flags(text, "block")}
    assert flags["U+200B"].kind == "invisible" and flags["U+200B"].shown == "\\u200b"
    assert flags["U+00A0"].kind == "space"
    assert flags["U+202E"].kind == "invisible"


def test_a_line_break_inside_a_one_line_value_is_flagged_but_not_in_running_text() -> None:
    message = "fix\n\n--amend"
    assert [flag.kind for flag in char_flags(message)] == ["line_break"]
    assert escaped(message) == "fix\\n\\n--amend"
    assert char_flags(message, "block") == ()
    # A carriage return rewrites a line wherever it stands.
    assert [flag.code for flag in char_flags("a\rb", "block")] == ["U+000D"]


def test_cyrillic_text_is_marked_only_where_it_mixes_into_a_latin_word() -> None:
    russian = "\u043f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440"  # a Russian greeting
    assert char_flags(russian, "block") == ()
    assert [f.code for f in char_flags(f"{russian} p\u0430ypal.com", "block")] == ["U+0430"]


def test_escaped_text_is_unambiguous_a_literal_backslash_n_stays_apart() -> None:
    assert escaped("a\\nb") == "a\\nb"  # nothing to escape: left as written
    assert escaped("a\\nb\nc") == "a\\\\nb\\nc"
