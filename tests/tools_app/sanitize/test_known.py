"""Known secrets are found whatever their spelling: split, spaced, hex, base64, base64url."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools_app.sanitize import KnownSecrets, redact_secrets, sanitize_output
from tools_app.sanitize.controls import strip_invisible
from tools_app.sanitize.encodings import secret_spellings

SECRET_KEY = "django-insecure-Kq3!vR8$zT1@wY6^pL0&nM4*bX7(cJ2)hF9_dG5+sA"
MARKER = "[REDACTED:known_secret]"
RAW = SECRET_KEY.encode()


def _b64_blob(offset: int, *, urlsafe: bool = False) -> str:
    """The secret base64-encoded inside a longer blob, `offset` bytes in."""
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(b"HEAD"[:offset] + RAW + b"tail bytes").decode()


ENCODED = {
    "plain": f"key: {SECRET_KEY}\n",
    "split over two lines": f"key: {SECRET_KEY[:25]}\n{SECRET_KEY[25:]}\n",
    "split with carriage return and indent": f"{SECRET_KEY[:10]}\r\n    {SECRET_KEY[10:]}",
    "space separated": " ".join(SECRET_KEY),
    "json escaped": json.dumps({"v": SECRET_KEY + '"q\\'}),
    "percent encoded": "https://x.test/?k=" + quote(SECRET_KEY, safe=""),
    "percent encoded lower": "k="
    + re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quote(SECRET_KEY, safe="")),
    "hex": "bytes " + RAW.hex(),
    "hex upper": RAW.hex().upper(),
    "hex spaced": " ".join(f"{b:02x}" for b in RAW),
    "base64 whole": base64.b64encode(RAW).decode(),
    "base64 offset 0": _b64_blob(0),
    "base64 offset 1": _b64_blob(1),
    "base64 offset 2": _b64_blob(2),
    "base64url offset 0": _b64_blob(0, urlsafe=True),
    "base64url offset 1": _b64_blob(1, urlsafe=True),
    "base64url offset 2": _b64_blob(2, urlsafe=True),
    "base64 wrapped at 20": "\n".join(
        base64.b64encode(RAW)[i : i + 20].decode() for i in range(0, 80, 20)
    ),
    "hidden by invisible characters": SECRET_KEY[:7] + "\u200b\u2066" + SECRET_KEY[7:],
}


def _revealing_pieces(text: str) -> list[str]:
    """Runs of 12 characters of each spelling of the secret: none may be left."""
    pieces = []
    for spelling in secret_spellings(SECRET_KEY):
        for start in range(0, max(1, len(spelling.text) - 12), 6):
            pieces.append(spelling.text[start : start + 12])
    return [piece for piece in pieces if len(piece) == 12 and piece in "".join(text.split())]


@pytest.mark.parametrize("text", ENCODED.values(), ids=ENCODED.keys())
def test_known_secret_is_redacted_in_every_encoding(text: str) -> None:
    result = sanitize_output(text, known_secrets=[SECRET_KEY], max_chars=100_000)
    assert MARKER in result.text
    assert not _revealing_pieces(result.text), result.text
    assert any(r.kind == "known_secret" for r in result.redactions)


@pytest.mark.parametrize("text", ENCODED.values(), ids=ENCODED.keys())
def test_the_same_text_without_the_secret_is_left_alone(text: str) -> None:
    # Positive control: the same text, the console knowing another secret, is left
    # as it was but for what stripping removes.
    other = "another-secret-value-of-the-console-0123456789"
    result = sanitize_output(text, known_secrets=[other], max_chars=100_000)
    assert result.text == strip_invisible(text)[0]
    assert not result.redactions


def test_base64_of_another_value_is_not_redacted() -> None:
    blob = base64.b64encode(b"an ordinary attachment, nothing secret in it").decode()
    assert redact_secrets(blob, [SECRET_KEY]) == blob


def test_words_around_a_split_secret_survive() -> None:
    text = f"before {SECRET_KEY[:30]}\n{SECRET_KEY[30:]} after"
    assert redact_secrets(text, [SECRET_KEY]) == f"before {MARKER} after"


def test_base64_padding_and_mixed_neighbours_go_with_the_secret() -> None:
    text = "data=" + base64.b64encode(b"x" + RAW).decode() + ";next"
    clean = redact_secrets(text, [SECRET_KEY])
    assert clean.startswith("data=") and clean.endswith(";next")
    assert "=" not in clean.removeprefix("data=")


@pytest.mark.parametrize("minimum", [8, 20])
def test_secrets_shorter_than_the_minimum_never_match(minimum: int) -> None:
    short = "x" * (minimum - 1)
    long = "y7" * minimum
    known = KnownSecrets([short, long], min_length=minimum)
    assert {s.text for s in known.spellings}.isdisjoint({short, short.encode().hex()})
    assert redact_secrets(f"{short} {long}", [short, long], min_secret_length=minimum) == (
        f"{short} {MARKER}"
    )


def test_whitespace_does_not_count_towards_the_minimum() -> None:
    assert redact_secrets("a b c d e f g", ["a b c d e f g"]) == "a b c d e f g"


def test_a_marker_is_never_part_of_a_match() -> None:
    # Redacting twice gives what redacting once gave, even around markers.
    text = f"{SECRET_KEY[:20]}[REDACTED:jwt]{SECRET_KEY[20:]}"
    assert redact_secrets(text, [SECRET_KEY]) == text


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Z", "Cc"]),
        min_size=8,
        max_size=40,
    ),
    before=st.binary(max_size=7),
    after=st.binary(max_size=7),
    urlsafe=st.booleans(),
)
def test_base64_of_any_secret_at_any_offset_is_found(
    secret: str, before: bytes, after: bytes, urlsafe: bool
) -> None:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    data = secret.encode()
    blob = encode(before + data + after).decode()
    clean = redact_secrets(blob, [secret])
    assert MARKER in clean
    # What is left around the marker is the neighbours' bytes only.
    assert len(clean) - len(MARKER) <= 4 * (len(before) + len(after)) // 3 + 4


@pytest.mark.parametrize("at", [0, 1000, 1020, 1023, 1024, 2047, 5000])
def test_a_split_secret_anywhere_in_a_long_output_is_found_and_nothing_else_moves(
    at: int,
) -> None:
    filler = "word \n\t" * 1200
    split = f"{SECRET_KEY[:17]} \n {SECRET_KEY[17:40]}\n{SECRET_KEY[40:]}"
    text = filler[:at] + "<" + split + ">" + filler[at:]
    assert redact_secrets(text, [SECRET_KEY]) == filler[:at] + f"<{MARKER}>" + filler[at:]
