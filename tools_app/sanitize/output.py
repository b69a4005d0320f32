"""What an agent is shown of a tool's output: stripped, redacted, size-limited."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tools_app.sanitize.controls import strip_invisible
from tools_app.sanitize.credentials import MARKER, TRUNCATION_MARKER
from tools_app.sanitize.known import MIN_KNOWN_SECRET_LENGTH, KnownSecrets, known_secrets_for
from tools_app.sanitize.redaction import redact_counted


@dataclass(frozen=True)
class RedactionCount:
    """How many secrets of one kind were redacted."""

    kind: str
    count: int


@dataclass(frozen=True)
class SanitizedText:
    """Sanitised output. `redactions` and `stripped_chars` count over the whole
    output, including any part cut off by the size limit."""

    text: str
    truncated: bool
    redactions: tuple[RedactionCount, ...]
    stripped_chars: int


class SanitizeLimitError(ValueError):
    """The size limit is not a usable number of characters."""


def redaction_counts(counts: Counter[str]) -> tuple[RedactionCount, ...]:
    """Counts per kind, in a stable order."""
    return tuple(RedactionCount(kind, counts[kind]) for kind in sorted(counts))


def sanitize_output(
    text: str,
    *,
    known_secrets: Iterable[str] = (),
    max_chars: int,
    min_secret_length: int = MIN_KNOWN_SECRET_LENGTH,
    shapes: bool = True,
) -> SanitizedText:
    """Strip invisible and control characters, redact secrets, cut to `max_chars`.

    Text that is cut ends with `TRUNCATION_MARKER` (within `max_chars`, when the
    limit leaves room for it) and is flagged `truncated`. Sanitising the result
    again gives the same text. `shapes=False` leaves credential shapes alone and
    redacts known secrets only (for the console's own words).
    """
    if max_chars < 0:
        raise SanitizeLimitError(f"max_chars must be at least 0, got {max_chars}")
    known = known_secrets_for(tuple(known_secrets), min_secret_length)
    stripped, stripped_chars = strip_invisible(text)
    redacted, counts = redact_counted(stripped, known, shapes=shapes)
    limited, truncated = _limit(redacted, max_chars, known, counts, shapes=shapes)
    return SanitizedText(
        text=limited,
        truncated=truncated,
        redactions=redaction_counts(counts),
        stripped_chars=stripped_chars,
    )


def _cut_point(text: str, limit: int) -> int:
    """`limit`, moved back to the start of a marker it would split."""
    window_start = max(0, limit - 64)
    for found in MARKER.finditer(text, window_start, min(len(text), limit + 64)):
        if found.start() < limit < found.end():
            return found.start()
    return limit


def _limit(
    text: str, limit: int, known: KnownSecrets, counts: Counter[str], *, shapes: bool
) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    # The marker fits inside the limit when the limit is not absurdly small.
    ending = TRUNCATION_MARKER if limit >= 2 * len(TRUNCATION_MARKER) else ""
    room = limit - len(ending)
    while len(text) > room:
        # The cut can end a run early and so complete a credential shape that
        # the longer run did not have (`AKIA` + 16 of 30 characters): redact the
        # cut text again, and cut again if the marker does not fit.
        cut = text[: _cut_point(text, room)]
        text, recounted = redact_counted(cut, known, shapes=shapes)
        counts.update(recounted)
    return text + ending, True
