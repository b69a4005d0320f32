"""Replace secrets in text with `[REDACTED:<kind>]`, counting what went."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Protocol
from urllib.parse import quote

from tools_app.sanitize.assignments import AssignmentRule
from tools_app.sanitize.controls import strip_invisible
from tools_app.sanitize.credentials import TOKEN_RULES, Candidate, marker

KNOWN_SECRET = "known_secret"
# Shorter strings would match ordinary words and numbers.
MIN_KNOWN_SECRET_LENGTH = 8
# One rule's replacement can leave a boundary another rule was waiting for
# (`xAKIA…` once `x…` is gone), so the rules run again until nothing changes.
_MAX_PASSES = 4


def known_secret_forms(known_secrets: Iterable[str]) -> tuple[str, ...]:
    """Every spelling of each secret worth looking for, longest first.

    Besides the secret itself: as it looks inside a JSON string, percent-encoded
    in a URL, and with invisible characters taken out (the output is stripped
    before it is redacted).
    """
    forms: set[str] = set()
    for secret in known_secrets:
        if not isinstance(secret, str) or len(secret) < MIN_KNOWN_SECRET_LENGTH:
            continue
        forms.update(
            (secret, json.dumps(secret)[1:-1], quote(secret, safe=""), strip_invisible(secret)[0])
        )
    usable = (form for form in forms if len(form) >= MIN_KNOWN_SECRET_LENGTH)
    return tuple(sorted(usable, key=len, reverse=True))


def _replace_known(text: str, forms: tuple[str, ...], counts: Counter[str]) -> str:
    replacement = marker(KNOWN_SECRET)
    for form in forms:
        found = text.count(form)
        if found:
            counts[KNOWN_SECRET] += found
            text = text.replace(form, replacement)
    return text


class SecretRule(Protocol):
    """Finds candidate secrets of one kind."""

    @property
    def kind(self) -> str:
        """The kind named in the marker."""
        ...

    @property
    def hints(self) -> tuple[str, ...]:
        """Lower-case strings any match contains; none in the text skips the rule."""
        ...

    def find(self, text: str, position: int) -> Candidate | None: ...


# Specific shapes first, so a value is named by what it is (`jwt`) rather than
# by the key it sits under (`secret_value`).
RULES: tuple[SecretRule, ...] = (*TOKEN_RULES, AssignmentRule())


def _apply_rule(rule: SecretRule, text: str, counts: Counter[str]) -> str:
    pieces: list[str] = []
    copied = searched = 0
    while (candidate := rule.find(text, searched)) is not None:
        if candidate.accepted:
            pieces += (text[copied : candidate.start], marker(rule.kind))
            copied = candidate.end
            counts[rule.kind] += 1
        searched = max(candidate.resume, searched + 1)
    pieces.append(text[copied:])
    return "".join(pieces)


def redact_counted(text: str, forms: tuple[str, ...] = ()) -> tuple[str, Counter[str]]:
    """Redact `text`; answer it with a count per kind. `forms` from `known_secret_forms`."""
    counts: Counter[str] = Counter()
    text = _replace_known(text, forms, counts)
    for _ in range(_MAX_PASSES):
        redacted = text
        lowered = text.lower()
        for rule in RULES:
            if not rule.hints or any(hint in lowered for hint in rule.hints):
                redacted = _apply_rule(rule, redacted, counts)
        if redacted == text:
            break
        text = redacted
    return text, counts


def redact_secrets(text: str, known_secrets: Iterable[str] = ()) -> str:
    """`text` with credential-shaped strings and every known secret replaced by a marker."""
    return redact_counted(text, known_secret_forms(known_secrets))[0]
