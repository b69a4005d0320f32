"""Output sanitisation: what an agent is shown of a tool's output."""

# ruff: noqa: E501  (sample credentials read best one per line)

from __future__ import annotations

import json
import sys
import unicodedata
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools_app.sanitize import (
    TRUNCATION_MARKER,
    RedactionCount,
    SanitizeLimitError,
    redact_secrets,
    redact_structure,
    sanitize_output,
)
from tools_app.sanitize.controls import is_invisible, strip_invisible
from tools_app.sanitize.encodings import squeeze
from tools_app.sanitize.keys import SECRET_NAME_HINTS, SECRET_WORD_PAIRS, SECRET_WORDS

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi+ajvq3hr5kLdC4R7wTxRvhXW3\n"
    "Proc-Type: 4,ENCRYPTED\nDEK-Info: DES-EDE3-CBC,0A1B2C3D\n"
    "Vq3hr5kLdC4R7wTxRvhXW3==\n"
    "-----END RSA PRIVATE KEY-----"
)
AZURE_ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

# (kind, text, the secret inside it). Each secret must vanish and its marker appear.
CREDENTIALS = [
    ("aws_access_key_id", "key id AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_access_key_id", "ASIAY34FZKBOKMUTVV7A,", "ASIAY34FZKBOKMUTVV7A"),
    (
        "aws_secret_access_key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws_secret_access_key",
        '"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("gcp_api_key", "maps?key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&x", "AIzaSyDdI0hCZtE6vySjMm"),
    (
        "private_key",
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n"}',
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),
    ("private_key", f"before\n{PEM}\nafter", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi"),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n(truncated",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    (
        "azure_key",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE_ACCOUNT_KEY};EndpointSuffix=core.windows.net",
        AZURE_ACCOUNT_KEY,
    ),
    (
        "azure_key",
        "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=abcdEFGH1234ijklMNOP5678qrstUVWX=",
        "abcdEFGH1234ijklMNOP5678qrstUVWX=",
    ),
    (
        "azure_key",
        "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=ABCdef123%2BGHIjkl456%3D",
        "ABCdef123%2BGHIjkl456%3D",
    ),
    (
        "azure_client_secret",
        "client secret abc8Q~defghijklmnopqrstuvwxyzABCDEFGHIJ now",
        "abc8Q~defghijklmnopqrstuvwxyzABCDEFGHIJ",
    ),
    (
        "github_token",
        "token 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.",
        "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",
    ),
    (
        "github_token",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_token",
        "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_token",
        "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_token",
        "ghr_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghr_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_token",
        "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefgh",
        "github_pat_11ABCDEFG0abcdefghijkl",
    ),
    ("gitlab_token", "glpat-Xy7dP2kLm9Qw3Rt5Zb8N", "glpat-Xy7dP2kLm9Qw3Rt5Zb8N"),
    (
        "slack_token",
        "SLACK=xoxb-123456789012-1234567890123-abcdefghijABCDEFGHIJklmn",
        "xoxb-123456789012",
    ),
    (
        "slack_token",
        "xoxp-123456789012-123456789012-abcdef",
        "xoxp-123456789012-123456789012-abcdef",
    ),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    ("stripe_key", "Stripe: sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe_key", "rk_live_51H8abcdEFGHijklMNOP", "rk_live_51H8abcdEFGHijklMNOP"),
    (
        "openai_key",
        "OPENAI sk-proj-abc123DEF456ghi789JKL012mno345PQR",
        "sk-proj-abc123DEF456ghi789JKL012mno345PQR",
    ),
    ("openai_key", "sk-T3BlbkFJabcdefghijklmnopqrstuvwxyz0123456789AB", "sk-T3BlbkFJabcdefghij"),
    (
        "anthropic_key",
        "ANTHROPIC sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-ABC_def",
        "sk-ant-api03-abcdefghijklmnop",
    ),
    ("jwt", f"id_token: {JWT}", JWT),
    ("jwt", f'{{"t":"{JWT}"}}', JWT),
    ("authorization", "Authorization: Bearer abcdef123456", "abcdef123456"),
    ("authorization", 'curl -H "Authorization: Basic dXNlcjpwYXNz" https://x', "dXNlcjpwYXNz"),
    ("authorization", "proxy-authorization: Token 9f8e7d6c5b4a", "9f8e7d6c5b4a"),
    ("bearer_token", "sent Bearer 9a8b7c6d5e4f3a2b1c0d with it", "9a8b7c6d5e4f3a2b1c0d"),
    ("basic_auth", "header was Basic YWxpY2U6czNjcjN0", "YWxpY2U6czNjcjN0"),
    ("url_password", "postgres://admin:hunter22@db.local:5432/app", "hunter22"),
    ("url_password", "git clone https://bob:p%40ss!word@git.example.com/r.git", "p%40ss!word"),
    ("secret_value", "password=hunter22 user=bob", "hunter22"),
    ("secret_value", 'DB_PASSWORD="correct horse battery"', "correct horse battery"),
    ("secret_value", "client_secret: 0a1b2c3d4e5f", "0a1b2c3d4e5f"),
    ("secret_value", "{'api_key': 'k-123456'}", "k-123456"),
    ("secret_value", "X-Api-Key: f00dfeedbeef", "f00dfeedbeef"),
    ("secret_value", "https://x.org/cb?user=a&access_token=zzTOPzz&y=1", "zzTOPzz"),
    ("secret_value", 'export GITHUB_TOKEN="it\'s-a-secret"', "it's-a-secret"),
    (
        "synthorg_token",
        "agent token soa_AbCd1234_" + "Zz9_-" * 8 + " issued",
        "soa_AbCd1234_" + "Zz9_-" * 8,
    ),
    ("synthorg_token", "sop_Q1w2E3r4_" + "x" * 43, "sop_Q1w2E3r4_" + "x" * 43),
]

# Text that looks close to a credential and must come through untouched.
NEAR_MISSES = [
    "AKIAIOSFODNN7EXAMPL is one short",
    "XAKIAIOSFODNN7EXAMPLE is inside a word",
    "AKIAIOSFODNN7EXAMPLE1 is one too long",
    "ghp_short",
    "github_pat_tooshort",
    "glpat-short",
    "xoxb-123",
    "sk_live_short",
    "sk-learn-compatible-estimators-are-great",
    "task-1234567890abcdefghijkl",
    "AIzaTooShort",
    "eyJub3QiOiJhIGp3dCJ9.eyJzdWIiOiIxIn0.sig",  # header has no alg
    "eyJhbGciOiJIUzI1NiJ9 alone",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOC\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOC\n-----END CERTIFICATE-----",
    "https://example.com/path?x=1#frag",
    "ssh://git@github.com/org/repo.git",
    "mailto:bob@example.com",
    "token = get_token()",
    "password = request.POST['password']",
    "secret = os.environ.get('SECRET')",
    "def login(password: str, token: str = None) -> bool:",
    'password: "${DB_PASSWORD}"',
    "password: <your password here>",
    "password = ********",
    "max_tokens=4096 tokens_used=12",
    "author: Jane Doe",
    "The bearer of this letter is trusted.",
    "A basic understanding of Bearer authentication-schemes helps.",
    "Basic configuration follows.",
    "soa_short_token",
    "sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "Authorization: Bearer [REDACTED:jwt]",
]


@pytest.mark.parametrize(("kind", "text", "secret"), CREDENTIALS)
def test_credential_is_redacted(kind: str, text: str, secret: str) -> None:
    clean = redact_secrets(text)
    assert secret not in clean
    assert f"[REDACTED:{kind}]" in clean


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_is_left_alone(text: str) -> None:
    assert redact_secrets(text) == text


@pytest.mark.parametrize(("kind", "text", "secret"), CREDENTIALS)
def test_credential_is_counted(kind: str, text: str, secret: str) -> None:
    result = sanitize_output(text, max_chars=10_000)
    assert RedactionCount(kind, 1) in result.redactions


def test_redaction_keeps_what_is_not_secret() -> None:
    assert (
        redact_secrets("postgres://admin:hunter22@db.local:5432/app")
        == "postgres://admin:[REDACTED:url_password]@db.local:5432/app"
    )
    assert redact_secrets("Authorization: Bearer abc123def") == (
        "Authorization: Bearer [REDACTED:authorization]"
    )
    assert redact_secrets(f"a\n{PEM}\nb") == "a\n[REDACTED:private_key]\nb"
    assert redact_secrets('{"password": "p4ss", "user": "bob"}') == (
        '{"password": "[REDACTED:secret_value]", "user": "bob"}'
    )


def test_many_secrets_in_one_text_are_all_counted() -> None:
    text = "\n".join(sample for _, sample, _ in CREDENTIALS)
    result = sanitize_output(text, max_chars=1_000_000)
    for _, _, secret in CREDENTIALS:
        assert secret not in result.text
    assert sum(r.count for r in result.redactions) >= len(CREDENTIALS)


# --- known secrets -------------------------------------------------------------

SECRET_KEY = "django-insecure-k3y!with$odd=chars"


@pytest.mark.parametrize(
    "text",
    [
        f"settings: {SECRET_KEY} end",
        json.dumps({"k": SECRET_KEY + '"quoted"'}),
        f"https://x/?k={quote(SECRET_KEY, safe='')}",
        "prefix" + SECRET_KEY + "suffix",
    ],
)
def test_known_secret_is_redacted_in_every_spelling(text: str) -> None:
    clean = redact_secrets(text, known_secrets=[SECRET_KEY, SECRET_KEY + '"quoted"'])
    assert SECRET_KEY not in clean
    assert quote(SECRET_KEY, safe="") not in clean
    assert "[REDACTED:known_secret]" in clean


def test_known_secret_hidden_by_invisible_characters_is_still_found() -> None:
    hidden = SECRET_KEY[:5] + "\u200b\u2063" + SECRET_KEY[5:] + "\x1b[0m"
    result = sanitize_output(hidden, known_secrets=[SECRET_KEY], max_chars=1000)
    assert result.text == "[REDACTED:known_secret]"


def test_short_known_secrets_are_ignored() -> None:
    assert redact_secrets("the word admin stays", known_secrets=["admin", ""]) == (
        "the word admin stays"
    )


# --- stripping -----------------------------------------------------------------

STRIPPED = [
    ("csi colour", "\x1b[1;31mred\x1b[0m", "red"),
    ("csi cursor", "ok\x1b[2K\x1b[1Ahidden", "okhidden"),
    ("8-bit csi", "a\x9b31mb", "ab"),
    ("osc title", "\x1b]0;evil title\x07text", "text"),
    ("osc 8 link", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "click"),
    ("osc 52 clipboard", "x\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07y", "xy"),
    ("dcs", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),
    ("apc", "a\x1b_payload\x1b\\b", "ab"),
    ("pm", "a\x1b^privacy\x1b\\b", "ab"),
    ("sos", "a\x1bXstring\x9cb", "ab"),
    ("single escapes", "\x1bc\x1b7a\x1b(Bb\x1b=", "ab"),
    ("lone esc", "a\x1b", "a"),
    ("unterminated osc", "a\x1b]8;;http://x", "a8;;http://x"),
    ("c1 controls", "a\x85b\x8dc\x9fd", "abcd"),
    ("c0 controls", "a\x00b\x07c\x08d\x0be\x0cf\x7fg", "abcdefg"),
    ("crlf", "one\r\ntwo\r\n", "one\ntwo\n"),
    ("lone cr", "safe\rEVIL", "safeEVIL"),
    ("line separators", "a\u2028b\u2029c", "a\nb\nc"),
    ("bidi override", "access\u202e\u2066txt.exe\u2069\u202c", "accesstxt.exe"),
    ("bidi marks", "a\u200eb\u200fc\u061cd\u202ae\u202bf\u202dg", "abcdefg"),
    ("tags", "hi\U000e0001\U000e0049\U000e0047\U000e004e\U000e007f", "hi"),
    ("zero width", "a\u200bb\u200cc\u200dd\u2060e\ufefff\u180eg", "abcdefg"),
    ("variation selectors", "x\ufe0f\U000e0100\U000e01efy", "xy"),
    ("invisible operators", "a\u2061b\u2062c\u2063d\u2064e", "abcde"),
    ("soft hyphen and fillers", "pass\u00adword\u3164\u115f", "password"),
]


@pytest.mark.parametrize(("name", "text", "expected"), STRIPPED, ids=[s[0] for s in STRIPPED])
def test_invisible_and_control_characters_are_stripped(name: str, text: str, expected: str) -> None:
    result = sanitize_output(text, max_chars=1000)
    assert result.text == expected
    assert result.stripped_chars == len(text) - len(expected)


def test_tabs_newlines_and_visible_unicode_survive() -> None:
    text = "col\tcol\nzażółć 日本語 émoji 🎉 עברית العربية"
    assert sanitize_output(text, max_chars=1000).text == text


def test_every_format_character_is_invisible_to_the_agent() -> None:
    # Unicode's own list of format characters (Cf): any not covered here would
    # be a way to hide text from a person reading the same output.
    missed = [
        f"U+{point:04X}"
        for point in range(sys.maxunicode + 1)
        if unicodedata.category(chr(point)) == "Cf" and not is_invisible(chr(point))
    ]
    assert missed == []


def test_name_hints_cover_every_secret_word() -> None:
    for word in [*SECRET_WORDS, *("".join(pair) for pair in SECRET_WORD_PAIRS)]:
        assert any(hint in word for hint in SECRET_NAME_HINTS), word


def test_redaction_runs_after_stripping() -> None:
    # A zero-width space inside a key would otherwise split it past the pattern.
    text = "AKIA\u200bIOSFODNN7EXAMPLE"
    assert sanitize_output(text, max_chars=100).text == "[REDACTED:aws_access_key_id]"


# --- size limit ----------------------------------------------------------------


def test_short_output_is_not_truncated() -> None:
    result = sanitize_output("hello", max_chars=5)
    assert (result.text, result.truncated) == ("hello", False)


def test_long_output_is_cut_to_the_limit_and_flagged() -> None:
    result = sanitize_output("x" * 100, max_chars=10)
    assert (result.text, result.truncated) == ("x" * 10, True)


def test_cut_output_ends_with_the_truncation_marker_within_the_limit() -> None:
    result = sanitize_output("line\n" * 100, max_chars=60)
    assert result.truncated and len(result.text) <= 60
    assert result.text.endswith(TRUNCATION_MARKER)
    assert result.text.startswith("line\nline\n")


def test_limit_counts_characters_not_bytes() -> None:
    result = sanitize_output("日本語テキスト", max_chars=3)
    assert (result.text, result.truncated) == ("日本語", True)


@pytest.mark.parametrize("limit", range(1, 40))
def test_cut_never_splits_a_marker(limit: int) -> None:
    text = "ab AKIAIOSFODNN7EXAMPLE cd"
    result = sanitize_output(text, max_chars=limit)
    assert len(result.text) <= limit
    assert "AKIA" not in result.text
    assert "[REDACTED" not in result.text or "[REDACTED:aws_access_key_id]" in result.text


def test_cut_that_completes_a_credential_shape_is_redacted() -> None:
    # Whole, the run is too long to be a GitHub token; cut to 100 characters it is one.
    text = "ghp_" + "a1" * 150
    assert redact_secrets(text) == text
    result = sanitize_output(text, max_chars=100)
    assert (result.text, result.truncated) == ("[REDACTED:github_token]" + TRUNCATION_MARKER, True)


def test_completed_shape_whose_marker_does_not_fit_is_cut_away() -> None:
    result = sanitize_output("ab AKIAIOSFODNN7EXAMPLE" + "Q" * 30, max_chars=23)
    assert (result.text, result.truncated) == ("ab ", True)


def test_negative_limit_is_refused() -> None:
    with pytest.raises(SanitizeLimitError):
        sanitize_output("x", max_chars=-1)


# --- structures ----------------------------------------------------------------


def test_values_under_secret_keys_are_redacted_at_any_depth() -> None:
    arguments = {
        "path": "notes.txt",
        "headers": {"Authorization": "Bearer abc", "X-Trace": "t1"},
        "db": {"credentials": {"user": "bob", "port": 5432}, "password_set": True},
        "apiKey": ["one", "two"],
        "privateKey": None,
        "max_tokens": 128,
        "note": "uses AKIAIOSFODNN7EXAMPLE",
        "secret": "",
    }
    assert redact_structure(arguments) == {
        "path": "notes.txt",
        "headers": {"Authorization": "[REDACTED:secret_value]", "X-Trace": "t1"},
        "db": {
            "credentials": {"user": "[REDACTED:secret_value]", "port": "[REDACTED:secret_value]"},
            "password_set": True,
        },
        "apiKey": ["[REDACTED:secret_value]", "[REDACTED:secret_value]"],
        "privateKey": None,
        "max_tokens": 128,
        "note": "uses [REDACTED:aws_access_key_id]",
        "secret": "",
    }


def test_structure_redacts_known_secrets_in_values_and_keys() -> None:
    value = {"cmd": ["echo", SECRET_KEY], SECRET_KEY: 1}
    assert redact_structure(value, [SECRET_KEY]) == {
        "cmd": ["echo", "[REDACTED:known_secret]"],
        "[REDACTED:known_secret]": 1,
    }


def test_structure_does_not_modify_its_input() -> None:
    value = {"password": "p", "list": ("a", "b")}
    result = redact_structure(value)
    assert value == {"password": "p", "list": ("a", "b")}
    assert result == {"password": "[REDACTED:secret_value]", "list": ["a", "b"]}


def test_deep_structure_does_not_overflow_the_stack() -> None:
    deep: object = "AKIAIOSFODNN7EXAMPLE"
    for _ in range(20_000):
        deep = [deep]
    result = redact_structure(deep)
    for _ in range(20_000):
        assert isinstance(result, list)
        result = result[0]
    assert result == "[REDACTED:aws_access_key_id]"


# --- hostile input ------------------------------------------------------------

ADVERSARIAL = {
    "repeated prefixes": "sk-" * 350_000,
    "unterminated osc": "\x1b]" * 500_000,
    "unterminated csi": "\x1b[" + "0" * 1_000_000,
    "assignments": "a=" * 500_000,
    "secret assignments": "password=$" * 100_000,
    "url userinfo": "://a:" * 200_000,
    "pem headers": "-----BEGIN PRIVATE KEY-----" * 40_000,
    "jwt-ish": "eyJ." * 250_000,
    "bearer": "Bearer " * 150_000,
    "authorization": "Authorization: x " * 60_000,
    "long run": "A" * 1_000_000,
    "names": ("a" * 63 + "=") * 16_000,
    "zero width": "\u200b" * 1_000_000,
    "base64": "Basic " + "QUFB" * 250_000,
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ADVERSARIAL)
def test_megabyte_of_hostile_input_finishes(name: str) -> None:
    result = sanitize_output(ADVERSARIAL[name], known_secrets=["abcdefgh1234"], max_chars=4096)
    assert len(result.text) <= 4096


# --- properties ----------------------------------------------------------------

_FRAGMENTS = st.sampled_from(
    [
        "AKIAIOSFODNN7EXAMPLE", "password=", "token: ", "://u:", "@h", "Bearer ", "Basic ",
        "Authorization: ", JWT, "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----",
        "ghp_", "sk-", "sk-ant-", "xoxb-", "AIza", "\x1b[", "\x1b]", "\x07", "\x1b\\",
        "\u202e", "\u200b", "\U000e0041", "\r", "\n", "[REDACTED:", "]", '"', "=", " ",
    ]
)  # fmt: skip
TEXTS = st.lists(st.one_of(st.text(max_size=40), _FRAGMENTS), max_size=30).map("".join)
_MARKER_TEXT = "".join(f"[REDACTED:{k}]" for k in ("known_secret", "secret_value", "url_password"))
SECRETS = st.lists(
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_characters="[]", exclude_categories=["Cs"]),
        min_size=8,
        max_size=24,
    ).filter(lambda s: s not in _MARKER_TEXT),
    max_size=3,
)
FORBIDDEN = {"\x1b", "\r", "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\U000e0041"}


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(TEXTS, max_size=4), secrets=SECRETS, limit=st.integers(0, 400))
def test_output_never_contains_a_known_secret(
    parts: list[str], secrets: list[str], limit: int
) -> None:
    text = "".join(
        part + (secrets[i % len(secrets)] if secrets else "") for i, part in enumerate(parts)
    )
    result = sanitize_output(text, known_secrets=secrets, max_chars=limit)
    for secret in secrets:
        visible = strip_invisible(secret)[0]
        # Whitespace does not count towards a secret's length: it is not compared.
        if len(squeeze(visible)) >= 8:
            assert visible not in result.text
            assert secret not in result.text


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, secrets=SECRETS, limit=st.integers(0, 400))
def test_sanitising_twice_equals_once(text: str, secrets: list[str], limit: int) -> None:
    once = sanitize_output(text, known_secrets=secrets, max_chars=limit).text
    twice = sanitize_output(once, known_secrets=secrets, max_chars=limit)
    assert twice.text == once
    assert not twice.truncated


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, limit=st.integers(0, 400))
def test_no_escape_or_invisible_character_survives(text: str, limit: int) -> None:
    result = sanitize_output(text, max_chars=limit)
    assert not FORBIDDEN & set(result.text)
    assert not any(is_invisible(c) for c in result.text)
    assert len(result.text) <= limit


@settings(max_examples=200, deadline=None)
@given(text=TEXTS, secrets=SECRETS)
def test_redact_secrets_is_idempotent(text: str, secrets: list[str]) -> None:
    once = redact_secrets(text, secrets)
    assert redact_secrets(once, secrets) == once


@pytest.mark.parametrize(("kind", "text", "secret"), CREDENTIALS)
def test_every_credential_holds_a_hint_of_its_rule(kind: str, text: str, secret: str) -> None:
    # Text holding no hint of any rule skips them all: a rule whose hints miss
    # its own matches would never run.
    from tools_app.sanitize.redaction import RULES

    rules = [rule for rule in RULES if rule.kind == kind]
    assert rules and all(rule.hints for rule in RULES)
    assert any(hint in text.lower() for rule in rules for hint in rule.hints)


def test_a_reference_named_like_a_credential_is_redacted_as_one() -> None:
    from tools_app.sanitize.redaction import redact_secrets

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    # Control: a reference by name is kept as written.
    assert redact_secrets("Authorization: Bearer ${secret:GH_TOKEN}").endswith("${secret:GH_TOKEN}")
    for text in (f"Authorization: Bearer ${{secret:{token}}}", f"x ${{secret:{token}}} y"):
        assert token not in redact_secrets(text)
