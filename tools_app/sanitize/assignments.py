"""Secrets named by their key: `password=…`, `"client_secret": "…"`, `api-key: …`.

Found in two steps so that hostile text stays linear: a cheap pattern finds
`name =` or `name:`, the name is checked in Python, and only a name that says
secret has its value read. A value that turns out not to be a secret (a
placeholder, code, a marker) is skipped whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools_app.sanitize.credentials import Candidate, starts_with_marker
from tools_app.sanitize.keys import SECRET_NAME_HINTS, is_secret_name, not_a_secret

# Kind for a value named secret by its key (`password=…`, `{"token": …}`).
SECRET_VALUE = "secret_value"

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# A hint counts only this many name characters into a name.
_HINT_REACH = 60
_HINT = re.compile("|".join(SECRET_NAME_HINTS))
_HINT_ANY_CASE = re.compile("|".join(SECRET_NAME_HINTS), re.IGNORECASE)
_REST_OF_NAME = re.compile(r"[A-Za-z0-9_.-]*+")
_LEAD = re.compile(
    r"(?<![A-Za-z0-9_.-])"
    # Only names holding a hint go on to the word-by-word check in Python.
    rf"(?=[A-Za-z0-9_.-]{{0,60}}?(?i:{'|'.join(SECRET_NAME_HINTS)}))"
    r"(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,63}+)[\"']?\s{0,8}"
    r"(?::=|=>|[:=])\s{0,8}"
)
_VALUE = re.compile(
    r"(?P<quote>[\"'])?"
    r"(?P<secret>(?(quote)(?:(?!(?P=quote))[^\r\n]){1,512}+|[^\s,;&\"'<>(){}\[\]]{1,512}+))"
    r"(?(quote)(?P=quote))"
)
# Values that say where a secret comes from rather than being one: code,
# templates, environment expansions, type annotations, masks, auth schemes.
_NOT_A_VALUE = frozenset(
    {"none", "null", "nil", "true", "false", "str", "bytes", "int", "string", "optional",
     "undefined", "required", "redacted", "hidden", "secret", "password", "env",
     "bearer", "basic", "digest", "negotiate", "ntlm", "token"}
)  # fmt: skip
_PLACEHOLDER = re.compile(r"(?:\$|\{\{|%\(|<|\*+$|x+$|\.\.\.)", re.IGNORECASE)
_MIN_BARE_VALUE = 4


def _is_secret_value(value: re.Match[str]) -> bool:
    secret = value.group("secret")
    if starts_with_marker(secret) or _PLACEHOLDER.match(secret) or not_a_secret(secret):
        return False
    if value.group("quote"):
        return True
    # A bare value followed by a call, an index or an attribute is code, not data.
    if value.string[value.end() : value.end() + 1] in ("(", "[", "."):
        return False
    return len(secret) >= _MIN_BARE_VALUE and secret.lower() not in _NOT_A_VALUE


@dataclass(frozen=True)
class AssignmentRule:
    """`<secret name> <separator> <value>`, the value replaced."""

    kind: str = SECRET_VALUE
    hints: tuple[str, ...] = SECRET_NAME_HINTS

    def find(self, text: str, position: int) -> Candidate | None:
        """The next value assigned to a secret-looking name, at or after `position`."""
        while (lead := _next_lead(text, position)) is not None:
            position = lead.end()
            if not is_secret_name(lead.group("name")):
                continue
            value = _VALUE.match(text, lead.end())
            if value is None:
                continue
            start, end = value.span("secret")
            return Candidate(start, end, resume=value.end(), accepted=_is_secret_value(value))
        return None


def _next_lead(text: str, position: int) -> re.Match[str] | None:
    """`_LEAD.search(text, position)`, found from the hints rather than tried at
    every word: a name can only start where its run of name characters starts,
    at most `_HINT_REACH` characters before the first hint it holds."""
    haystack, hints = _lowered(text)
    while (hint := hints.search(haystack, position)) is not None:
        start = _run_start(text, hint.start())
        if start is not None and start >= position:
            lead = _LEAD.match(text, start)
            if lead is not None:
                return lead
        # No name in this run can match: go on after it.
        run_end = _REST_OF_NAME.match(text, hint.end())
        position = run_end.end() if run_end is not None else hint.end()
    return None


_last_lowered: list[tuple[str, str]] = []


def _lowered(text: str) -> tuple[str, re.Pattern[str]]:
    """Where to look for hints, and how: the lower-cased text with a plain pattern
    (much faster than a case-insensitive one) when lower-casing keeps every
    position, else the text itself. Names are ASCII, so nothing is missed."""
    if _last_lowered and _last_lowered[0][0] is text:
        lowered = _last_lowered[0][1]
    else:
        lowered = text.lower()
        # One entry: a rule looks for the next name in the same text many times.
        _last_lowered[:] = [(text, lowered)]
    if len(lowered) == len(text):
        return lowered, _HINT
    return text, _HINT_ANY_CASE


def _run_start(text: str, at: int) -> int | None:
    """Where the run of name characters holding `at` starts, if within reach of it."""
    start = at
    while start > 0 and text[start - 1] in _NAME_CHARS:
        if at - start == _HINT_REACH:
            return None
        start -= 1
    return start
