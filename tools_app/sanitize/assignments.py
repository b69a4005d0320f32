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
        while (lead := _LEAD.search(text, position)) is not None:
            position = lead.end()
            if not is_secret_name(lead.group("name")):
                continue
            value = _VALUE.match(text, lead.end())
            if value is None:
                continue
            start, end = value.span("secret")
            return Candidate(start, end, resume=value.end(), accepted=_is_secret_value(value))
        return None
