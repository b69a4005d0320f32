"""Output sanitisation and secret redaction (pure: no Django).

An agent sees tool output stripped of escape sequences and invisible
characters, with credential-shaped strings and the console's own secrets
replaced by `[REDACTED:<kind>]`, cut to a size limit. Callers keep the raw
output for auditors.
"""

from tools_app.sanitize.output import (
    RedactionCount,
    SanitizedText,
    SanitizeLimitError,
    sanitize_output,
)
from tools_app.sanitize.redaction import redact_secrets
from tools_app.sanitize.structure import redact_structure

__all__ = [
    "RedactionCount",
    "SanitizeLimitError",
    "SanitizedText",
    "redact_secrets",
    "redact_structure",
    "sanitize_output",
]
