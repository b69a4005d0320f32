"""Replace secrets in text with `[REDACTED:<kind>]`, counting what went.

A reference to a stored secret, `${secret:NAME}`, is not a secret value: the
value it stands for is added by the console on the way out, never written where
the reference stands. References are kept as written wherever a rule's match
takes them in (`"Authorization": "Bearer ${secret:GH}"`, `secret:NAME` read as an
assignment); what else the match holds is redacted as before. The console's own
secrets are redacted everywhere, inside a reference too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from tools_app.sanitize.assignments import AssignmentRule
from tools_app.sanitize.credentials import MARKER, TOKEN_RULES, Candidate, marker
from tools_app.sanitize.known import (
    KNOWN_SECRET,
    MIN_KNOWN_SECRET_LENGTH,
    KnownSecrets,
    known_secrets_for,
)

__all__ = [
    "KNOWN_SECRET",
    "MIN_KNOWN_SECRET_LENGTH",
    "SECRET_REFERENCE",
    "only_references",
    "redact_counted",
    "redact_secrets",
]

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


# `${secret:NAME}`, NAME as secrets_app.references allows it.
SECRET_REFERENCE = re.compile(r"\$\{secret:[A-Za-z_][A-Za-z0-9_.-]{0,99}\}")
_REFERENCE_HINT = "${secret:"
_WORD = re.compile(r"[A-Za-z0-9]+")
# Words beside a reference that say how it is sent, not what it is.
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey"})


def _holds_no_value(piece: str) -> bool:
    """True for text beside references that holds nothing secret: blanks, punctuation,
    an auth scheme or a marker the sanitiser wrote."""
    return all(word.lower() in _SCHEMES for word in _WORD.findall(MARKER.sub(" ", piece)))


def only_references(text: str) -> bool:
    """True for text made of secret references, with at most an auth scheme and
    punctuation beside them (`${secret:GH}`, `Bearer ${secret:GH}`,
    `${secret:USER}:${secret:PASS}`): it names secrets and holds no value."""
    if _REFERENCE_HINT not in text or SECRET_REFERENCE.search(text) is None:
        return False
    return _holds_no_value(SECRET_REFERENCE.sub(" ", text))


def _replacement(
    text: str, start: int, end: int, references: list[tuple[int, int]], kind: str
) -> str | None:
    """What replaces text[start:end]: the marker, or, when references lie in it, the
    references as written with the marker in place of each other part that may hold a
    value; None when nothing in it does."""
    inside = [(max(a, start), min(b, end)) for a, b in references if a < end and b > start]
    if not inside:
        return marker(kind)
    pieces: list[str] = []
    position = start
    redacted = False
    for a, b in [*inside, (end, end)]:
        between = text[position:a]
        if _holds_no_value(between):
            pieces.append(between)
        else:
            core = between.strip()
            lead = between[: len(between) - len(between.lstrip())]
            trail = between[len(between.rstrip()) :]
            pieces += (lead, marker(kind) if core else "", trail)
            redacted = True
        pieces.append(text[a:b])
        position = b
    return "".join(pieces) if redacted else None


def _shaped_like_a_credential(name: str) -> bool:
    """A reference whose name is itself credential-shaped (`${secret:ghp_…}`) is text
    that holds a value, not a name: it is redacted like any other."""
    for rule in TOKEN_RULES:
        searched = 0
        while (candidate := rule.find(name, searched)) is not None:
            if candidate.accepted:
                return True
            searched = max(candidate.resume, searched + 1)
    return False


def _apply_rule(rule: SecretRule, text: str, counts: Counter[str]) -> str:
    references = (
        [
            match.span()
            for match in SECRET_REFERENCE.finditer(text)
            if not _shaped_like_a_credential(match.group(0)[len(_REFERENCE_HINT) : -1])
        ]
        if _REFERENCE_HINT in text
        else []
    )
    pieces: list[str] = []
    copied = searched = 0
    while (candidate := rule.find(text, searched)) is not None:
        if candidate.accepted:
            replacement = _replacement(text, candidate.start, candidate.end, references, rule.kind)
            if replacement is not None:
                pieces += (text[copied : candidate.start], replacement)
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
