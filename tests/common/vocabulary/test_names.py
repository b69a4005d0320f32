"""Name keys and confusable skeletons."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from trust_app.policy import name_key, name_skeleton

ascii_names = st.text(alphabet=string.ascii_letters + string.digits + "_-.", min_size=1)


def test_name_key_folds_case_whitespace_and_compatibility_forms() -> None:
    assert name_key("  Read_File\t") == name_key("read_file")
    assert name_key("\uff52ead_file") == "read_file"
    assert name_key("read  file") == name_key("read file")
    assert name_key("read_file") != name_key("read_files")


def test_skeleton_folds_lookalikes() -> None:
    assert name_skeleton("p\u0430yp\u0430l") == name_skeleton("paypal")  # Cyrillic a
    assert name_skeleton("\u0391PI") == name_skeleton("api")  # Greek capital alpha
    assert name_skeleton("g00gle") == name_skeleton("google")
    assert name_skeleton("modern") == name_skeleton("modem")  # rn / m
    assert name_skeleton("de\u200blete") == name_skeleton("delete")  # zero-width space
    assert name_skeleton("read_file") != name_skeleton("write_file")


@given(ascii_names)
def test_skeleton_is_case_insensitive(name: str) -> None:
    assert name_skeleton(name.upper()) == name_skeleton(name.lower())


@given(ascii_names)
def test_equal_keys_imply_equal_skeletons(name: str) -> None:
    assert name_skeleton(name.swapcase()) == name_skeleton(name)
    assert name_key(name.swapcase()) == name_key(name)
