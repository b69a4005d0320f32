"""Replace secrets in text with `[REDACTED:<kind>]`, counting what went."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from tools_app.sanitize.assignments import AssignmentRule
from tools_app.sanitize.credentials import TOKEN_RULES, Candidate, marker
from tools_app.sanitize.known import (
    KNOWN_SECRET,
    MIN_KNOWN_SECRET_LENGTH,
    KnownSecrets,
    known_secrets_for,
)

__all__ = ["KNOWN_SECRET", "MIN_KNOWN_SECRET_LENGTH", "redact_counted", "redact_secrets"]

# One rule's replacement can leave a boundary another rule was waiting for
# (`xAKIA…` once `x…` is gone), so the rules run again until nothing changes.
_MAX_PASSES = 4


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


# Any hint of any rule: text holding none (most strings of a structured result)
# is left alone after one search.
_ANY_HINT = re.compile("|".join(re.escape(hint) for rule in RULES for hint in rule.hints))


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


def redact_counted(
    text: str, known: KnownSecrets | None = None, *, shapes: bool = True
) -> tuple[str, Counter[str]]:
    """Redact `text` (already stripped of invisible characters); answer it with a
    count per kind. `shapes=False` redacts known secrets only."""
    counts: Counter[str] = Counter()
    if known:
        text = known.redact(text, counts)
    for _ in range(_MAX_PASSES if shapes else 0):
        redacted = text
        lowered = text.lower()
        if _ANY_HINT.search(lowered) is None:
            break
        for rule in RULES:
            if any(hint in lowered for hint in rule.hints):
                redacted = _apply_rule(rule, redacted, counts)
        if redacted == text:
            break
        text = redacted
    return text, counts


def redact_secrets(
    text: str,
    known_secrets: Iterable[str] = (),
    *,
    min_secret_length: int = MIN_KNOWN_SECRET_LENGTH,
) -> str:
    """`text` with credential-shaped strings and every known secret replaced by a marker."""
    return redact_counted(text, known_secrets_for(tuple(known_secrets), min_secret_length))[0]
