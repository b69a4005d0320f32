"""Output sanitisation and secret redaction (pure: no Django).

Everything an agent sees goes through here: tool output, every string of a
structured result (keys too), error messages and the reasons relayed to it.
Escape sequences and invisible characters are stripped, credential-shaped
strings and the console's own secrets (in any spelling: split by whitespace,
JSON-escaped, percent-encoded, hex, base64, base64url) are replaced by
`[REDACTED:<kind>]`, and text is cut to a size limit with a marker. Callers
keep the raw output for auditors.
"""

from tools_app.sanitize.credentials import TRUNCATION_MARKER
from tools_app.sanitize.known import MIN_KNOWN_SECRET_LENGTH, KnownSecrets
from tools_app.sanitize.output import (
    RedactionCount,
    SanitizedText,
    SanitizeLimitError,
    sanitize_output,
)
from tools_app.sanitize.redaction import redact_secrets
from tools_app.sanitize.structure import SanitizedStructure, redact_structure, sanitize_structure

__all__ = [
    "MIN_KNOWN_SECRET_LENGTH",
    "TRUNCATION_MARKER",
    "KnownSecrets",
    "RedactionCount",
    "SanitizeLimitError",
    "SanitizedStructure",
    "SanitizedText",
    "redact_secrets",
    "redact_structure",
    "sanitize_output",
    "sanitize_structure",
]
