"""Credential-shaped strings and how to recognise each one.

Each rule is a regular expression plus, where a shape alone is too loose, a
check on the candidate (a JWT header must decode to JSON naming an `alg`; an
OpenAI-style key must mix letters and digits). Rules replace only the secret
part of a match: `user:[REDACTED:url_password]@host` keeps the user and host.

Every token rule starts with a literal prefix and a look-behind that refuses a
match in the middle of a longer run, and scans its body possessively, so a
match can begin only at the start of a run and each character is looked at a
bounded number of times: linear time on hostile input.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from trust_app.tokens.bearer import TOKEN_PATTERN

MARKER_PREFIX = "[REDACTED:"
# Ends text cut to a size limit, so a reader knows there was more.
TRUNCATION_MARKER = "\n[TRUNCATED]"
# What the sanitiser itself writes: never taken for (part of) a secret.
MARKER = re.compile(r"\[(?:REDACTED:[a-z0-9_]{1,40}|TRUNCATED)\]")
_AT_MARKER = re.compile(r"\[(?:REDACTED:|TRUNCATED\])")


def starts_with_marker(text: str) -> bool:
    """True when `text` begins with something the sanitiser wrote."""
    return _AT_MARKER.match(text) is not None


def marker(kind: str) -> str:
    """The text that stands in for one redacted secret."""
    return f"{MARKER_PREFIX}{kind}]"


@dataclass(frozen=True)
class Candidate:
    """A span that may be a secret, and where the search goes on from."""

    start: int
    end: int
    resume: int
    accepted: bool


@dataclass(frozen=True)
class CredentialRule:
    """One credential shape: where it starts, what to replace, when to believe it."""

    kind: str
    pattern: re.Pattern[str]
    # The named group holding the secret; the rest of the match is kept.
    group: str = "secret"
    accept: Callable[[re.Match[str]], bool] | None = None
    # Lower-case strings one of which any match contains. Text holding none of
    # them skips the rule: most output holds no credential at all, and a
    # substring test is far cheaper than a pattern without a literal prefix.
    # Every rule has some, so text holding no hint at all skips every rule.
    hints: tuple[str, ...] = ()

    def find(self, text: str, position: int) -> Candidate | None:
        """The next candidate secret at or after `position`, accepted or not."""
        match = self.pattern.search(text, position)
        if match is None:
            return None
        start, end = match.span(self.group)
        if start >= 0 and (self.accept is None or self.accept(match)):
            return Candidate(start, end, resume=match.end(), accepted=True)
        # Look again from where the candidate began, not past it: a rejected
        # candidate may hold a real secret further on.
        resume = start if start > match.start() else match.start() + 1
        return Candidate(start, end, resume=resume, accepted=False)


def _token(prefix: str, body: str, *, run: str = "A-Za-z0-9_-", flags: int = 0) -> re.Pattern[str]:
    """`prefix` + `body` as a whole run of `run` characters, never inside a longer one."""
    # The look-behind sits after the literal prefix so the engine can still
    # search for the prefix quickly; it checks the character before the prefix.
    behind = f"(?<![{run}].{{{len(prefix)}}})"
    return re.compile(
        f"(?P<secret>{re.escape(prefix)}{behind}{body})(?![{run}])",
        flags | re.DOTALL,
    )


def _has_letter_and_digit(match: re.Match[str]) -> bool:
    secret = match.group("secret")
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)


def _b64url_json(segment: str) -> object:
    padded = segment + "=" * (-len(segment) % 4)
    try:
        return json.loads(base64.urlsafe_b64decode(padded))
    except (ValueError, binascii.Error):
        return None


def _is_jwt(match: re.Match[str]) -> bool:
    header = _b64url_json(match.group("header"))
    return isinstance(header, dict) and "alg" in header


def _is_basic_credential(match: re.Match[str]) -> bool:
    value = match.group("secret")
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (ValueError, binascii.Error):
        return False
    return b":" in decoded


def _not_marker(match: re.Match[str]) -> bool:
    return not starts_with_marker(match.group("secret"))


_AWS_KEY_ID = "(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA)"

TOKEN_RULES: tuple[CredentialRule, ...] = (
    CredentialRule(
        "private_key",
        re.compile(
            r"(?P<secret>-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            # Body: base64, line breaks (also escaped ones, as in JSON), PEM headers.
            r"(?:[A-Za-z0-9+/=\s\\:,.]|-(?!----))*+"
            r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?)"
        ),
        hints=("private key",),
    ),
    CredentialRule(
        "jwt",
        re.compile(
            r"(?P<secret>(?P<header>eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]++)"
            r"\.[A-Za-z0-9_-]++\.[A-Za-z0-9_-]*+)(?![A-Za-z0-9_.-])"
        ),
        accept=_is_jwt,
        hints=("eyj",),
    ),
    CredentialRule(
        "synthorg_token",
        re.compile(f"(?P<secret>{TOKEN_PATTERN})(?![A-Za-z0-9_-])"),
        hints=("soa_", "sop_"),
    ),
    CredentialRule(
        "github_token", _token("github_pat_", "[A-Za-z0-9_]{22,255}+"), hints=("github_pat_",)
    ),
    CredentialRule(
        "github_token",
        _token("gh", "[pousr]_[A-Za-z0-9]{36,251}+"),
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    CredentialRule(
        "gitlab_token",
        _token("gl", "(?:pat|dt|rt|ptt|cbt|soat)-[A-Za-z0-9_-]{20,}+"),
        hints=("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-"),
    ),
    CredentialRule(
        "slack_token",
        _token("xox", "[abposr]-[A-Za-z0-9-]{10,}+"),
        hints=("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"),
    ),
    CredentialRule("slack_token", _token("xapp-", "[0-9]-[A-Za-z0-9-]{10,}+"), hints=("xapp-",)),
    CredentialRule(
        "slack_webhook",
        re.compile(r"hooks\.slack\.com/services/(?P<secret>T[A-Z0-9]++/B[A-Z0-9]++/[A-Za-z0-9]++)"),
        hints=("hooks.slack.com/services/",),
    ),
    CredentialRule(
        "stripe_key",
        _token("", "[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+"),
        hints=("k_live_", "k_test_"),
    ),
    CredentialRule("anthropic_key", _token("sk-ant-", "[A-Za-z0-9_-]{20,}+"), hints=("sk-ant-",)),
    CredentialRule(
        "openai_key",
        _token("sk-", "(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}+"),
        accept=_has_letter_and_digit,
        hints=("sk-",),
    ),
    CredentialRule("gcp_api_key", _token("AIza", "[A-Za-z0-9_-]{35}"), hints=("aiza",)),
    CredentialRule(
        "aws_access_key_id",
        _token("", f"{_AWS_KEY_ID}[A-Z0-9]{{16}}", run="A-Za-z0-9"),
        hints=tuple(prefix.lower() for prefix in _AWS_KEY_ID[3:-1].split("|")),
    ),
    CredentialRule(
        "aws_secret_access_key",
        re.compile(
            r"(?i:aws[_.-]?secret[_.-]?(?:access[_.-]?)?key|secret[_.-]?access[_.-]?key)"
            r"[\"']?\s{0,8}[:=]>?\s{0,8}[\"']?"
            r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        hints=("secret",),
    ),
    CredentialRule(
        "azure_key",
        re.compile(
            r"(?i:AccountKey|SharedAccessKey|SharedSecretValue)=(?P<secret>[A-Za-z0-9+/=%]{16,}+)"
        ),
        hints=("accountkey=", "sharedaccesskey=", "sharedsecretvalue="),
    ),
    CredentialRule(
        "azure_key",
        re.compile(r"[?&]sig=(?P<secret>[A-Za-z0-9+/=%]{16,}+)"),
        hints=("sig=",),
    ),
    CredentialRule(
        "azure_client_secret",
        _token("", r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}", run="A-Za-z0-9_~.-"),
        hints=("q~",),
    ),
    CredentialRule(
        "url_password",
        re.compile(r"://[^\s:/?#@\[\]]{0,256}+:(?P<secret>[^\s/?#]{1,256})@"),
        accept=_not_marker,
        hints=("://",),
    ),
    CredentialRule(
        "authorization",
        re.compile(
            r"(?i:(?<![A-Za-z0-9_-])(?:proxy-)?authorization)[\"']?\s{0,8}[:=]\s{0,8}[\"']?"
            # Possessive, so a scheme followed by a marker is not taken for the value.
            r"(?:(?i:bearer|basic|token|digest|negotiate|ntlm|apikey|sso-key)\s{1,8})?+"
            r"(?P<secret>(?!\[REDACTED:|\[TRUNCATED\])[^\s\"']++(?:[ \t]++[^\s\"']++)*+)"
        ),
        hints=("authorization",),
    ),
    CredentialRule(
        "bearer_token",
        re.compile(
            r"\b[Bb]earer\s{1,8}(?P<secret>[A-Za-z0-9._~+/-]{16,}+=*+)(?![A-Za-z0-9._~+/=-])"
        ),
        accept=_has_letter_and_digit,
        hints=("bearer",),
    ),
    CredentialRule(
        "basic_auth",
        re.compile(r"\bBasic\s{1,8}(?P<secret>[A-Za-z0-9+/]{8,}+={0,2})(?![A-Za-z0-9+/=])"),
        accept=_is_basic_credential,
        hints=("basic",),
    ),
)
