"""Structured results: every string and key sanitised, the shape and the schema kept."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.tools_app.sanitize.schema_strategy import instances
from tools_app.sanitize import sanitize_structure
from tools_app.sanitize.controls import is_invisible

SECRET_KEY = "django-insecure-Kq3!vR8$zT1@wY6^pL0&nM4*bX7(cJ2)hF9_dG5+sA"
# One of each kind of character an agent must never receive.
HOSTILE = [
    "\x1b[31m",
    "\x1b]8;;x\x07",
    "\x07",
    "\u202e",
    "\u2066",
    "\u200b",
    "\ufeff",
    "\U000e0041",
]


def _strings(value: Any) -> list[str]:
    """Every string in `value`, keys included."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found.append(item)
    return found


def _clean(text: str) -> bool:
    return "\x1b" not in text and not any(is_invisible(c) for c in text)


def test_every_string_and_key_is_stripped() -> None:
    hostile = "".join(HOSTILE)
    value = {
        f"name{hostile}": f"a{hostile}b",
        "entries": [{"name": f"evil{hostile}.txt", "size": 3}],
        "nested": {"deep": [[f"x{hostile}"]]},
    }
    clean = sanitize_structure(value).value
    assert all(_clean(s) for s in _strings(clean)), clean
    assert clean == {
        "name": "ab",
        "entries": [{"name": "evil.txt", "size": 3}],
        "nested": {"deep": [["x"]]},
    }


def test_normal_text_is_left_intact() -> None:
    # Positive control: nothing to strip or redact, nothing changes.
    value = {
        "text": "héllo wörld, 日本語, emoji 🎉, tab\tand newline\n",
        "path": "/home/x/notes.txt",
        "count": 3,
        "ratio": 0.5,
        "ok": True,
        "none": None,
    }
    result = sanitize_structure(value)
    assert result.value == value
    assert (result.redactions, result.stripped_chars, result.renamed_keys) == ((), 0, 0)


def test_known_secret_hidden_by_invisible_characters_is_found_in_structures() -> None:
    hidden = SECRET_KEY[:9] + "\u200b\U000e0020" + SECRET_KEY[9:]
    clean = sanitize_structure({"v": [hidden], hidden: 1}, known_secrets=[SECRET_KEY]).value
    assert clean == {"v": ["[REDACTED:known_secret]"], "[REDACTED:known_secret]": 1}


def test_numbers_under_secret_names_stay_numbers() -> None:
    value = {"l1_token_budget": 4000, "password": 12345678, "token": 1.5, "secret": True}
    assert sanitize_structure(value).value == value


def test_strings_under_secret_names_are_redacted_but_paths_and_short_numbers_are_not() -> None:
    value = {
        "password": "hunter2-correct-horse",
        "auth": {"user": "bob", "port": 5432},
        "PWD": "/home/x",
        "password_file": "/run/secrets/db",
        "pin": "1234",
        "token": "",
    }
    assert sanitize_structure(value).value == {
        "password": "[REDACTED:secret_value]",
        "auth": {"user": "[REDACTED:secret_value]", "port": 5432},
        "PWD": "/home/x",
        "password_file": "/run/secrets/db",
        "pin": "1234",
        "token": "",
    }


def test_keys_that_collide_once_sanitised_are_kept_apart() -> None:
    value = {"a\u200bb": 1, "ab": 2, "a\u202eb": 3}
    result = sanitize_structure(value)
    assert result.value == {"ab (2)": 1, "ab": 2, "ab (3)": 3}
    assert result.renamed_keys == 2
    assert list(result.value) == ["ab (2)", "ab", "ab (3)"], "order is kept"


def test_input_is_not_modified() -> None:
    value = {"k\u200b": ["a\u202e"]}
    sanitize_structure(value)
    assert value == {"k\u200b": ["a\u202e"]}


# --- properties over every built-in tool's output schema ------------------------


def _output_schemas() -> dict[str, dict[str, Any]]:
    # The built-ins only: read at import, before any database exists.
    from tools_app.registry import builtin_catalog

    catalog = builtin_catalog()
    schemas = {}
    for name in catalog.implementations:
        contract = catalog.contract(name)
        assert contract is not None
        schemas[name] = dict(contract.output_schema)
    return schemas


SCHEMAS = _output_schemas()
_HOSTILE_TEXT = st.lists(
    st.one_of(st.sampled_from(HOSTILE), st.text(max_size=8), st.just(SECRET_KEY)), max_size=6
).map("".join)


def _with_hostile_strings(value: Any, draw: st.DrawFn) -> Any:
    """`value` with hostile characters spliced into its strings (not its keys: a
    schema may fix them)."""
    if isinstance(value, dict):
        return {k: _with_hostile_strings(v, draw) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_hostile_strings(v, draw) for v in value]
    if isinstance(value, str):
        return draw(_HOSTILE_TEXT) + value + draw(_HOSTILE_TEXT)
    return value


@pytest.mark.parametrize("tool", sorted(SCHEMAS))
def test_schema_valid_in_is_schema_valid_out_and_clean(tool: str) -> None:
    schema = SCHEMAS[tool]
    validator = Draft202012Validator(schema)

    @st.composite
    def hostile_results(draw: st.DrawFn) -> Any:
        return _with_hostile_strings(draw(instances(schema)), draw)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(result=hostile_results())
    def check(result: Any) -> None:
        assert validator.is_valid(result), "the strategy makes valid results only"
        clean = sanitize_structure(result, known_secrets=[SECRET_KEY]).value
        assert validator.is_valid(clean), list(validator.iter_errors(clean))[:3]
        for text in _strings(clean):
            assert _clean(text), repr(text)
            assert SECRET_KEY not in text

    check()


@settings(max_examples=300, deadline=None)
@given(
    value=st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(st.text(max_size=6), children, max_size=4),
        ),
        max_leaves=20,
    )
)
def test_no_control_bidi_zero_width_or_tag_character_survives_anywhere(value: Any) -> None:
    result = sanitize_structure(value)
    assert all(_clean(text) for text in _strings(result.value))
    # The shape is kept: same number of keys at every level, non-strings untouched.
    assert _shape(result.value) == _shape(value)
    # Sanitising again changes nothing.
    assert sanitize_structure(result.value).value == result.value


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return ("dict", len(value), sorted((_shape(v) for v in value.values()), key=repr))
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value if not isinstance(value, str) else "str"
