"""PURE: what an upstream tool's definition hides from the person who approves it.

Every string an agent's model would read is checked: the title, the description,
and every string inside the schemas and annotations (titles, descriptions, enum
values, defaults, examples, property names). A definition that cannot be walked
is itself a finding, so a scanner failure holds the tool instead of passing it.

The scan normalises before it matches. Hidden characters are findings of their
own, and the text is then read as a model reads it: invisible characters
removed, fullwidth and other compatibility forms folded (NFKC), letters from
other scripts that imitate Latin ones folded to them (``Ignоre`` with a
Cyrillic ``о`` reads ``Ignore``), accents dropped. Base64, hex, percent and
entity-escaped runs are decoded (bounded, and only when the result is mostly
printable text) and the decoded text is scanned too. Phrases tolerate markup
and separators between their words, and the title and description are also read
together, so an instruction split between them is found.

Names are checked against the other tools the agent could see: a name that only
differs by case, separators or look-alike letters imitates that tool; a name
mixing scripts (Cyrillic ``а`` among Latin letters) is a homoglyph whatever it
imitates.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import re
import unicodedata
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

from confusable_homoglyphs import confusables

from common.vocabulary.names import name_key, name_skeleton
from tools_app.bridge.definitions import UpstreamTool
from tools_app.sanitize.controls import INVISIBLE

MAX_DEPTH: Final = 64


class Severity(IntEnum):
    INFO = 10
    LOW = 20
    MEDIUM = 30
    HIGH = 40
    CRITICAL = 50

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            allowed = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r}; allowed: {allowed}") from None


@dataclass(frozen=True)
class Finding:
    """One thing a reviewer should see, where it is, and how bad it is."""

    severity: Severity
    code: str
    field: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {
            "severity": self.severity.label,
            "code": self.code,
            "field": self.field,
            "reason": self.reason,
        }


# --- hidden characters --------------------------------------------------------

_TAG = re.compile("[\U000e0000-\U000e007f]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u180e]")


def _hidden(field: str, text: str) -> Iterator[Finding]:
    if text.isascii():  # only the sanitiser's set has ASCII members (C0 controls, DEL)
        other = INVISIBLE.search(text)
        if other is not None:
            yield Finding(
                Severity.HIGH,
                "invisible_character",
                field,
                f"{field} contains the invisible character U+{ord(other.group()[0]):04X}",
            )
        return
    for pattern, code, label in (
        (_TAG, "tag_character", "a tag character (invisible ASCII)"),
        (_BIDI, "bidi_control", "a bidi control (reorders what is shown)"),
        (_ZERO_WIDTH, "zero_width", "a zero-width character"),
    ):
        match = pattern.search(text)
        if match:
            yield Finding(
                Severity.CRITICAL,
                code,
                field,
                f"{field} contains {label} U+{ord(match.group()):04X}, invisible to the person "
                "who reviews it but read by the model",
            )
            return
    other = INVISIBLE.search(text)  # the sanitiser's own set, one compiled pass
    if other is not None:
        yield Finding(
            Severity.HIGH,
            "invisible_character",
            field,
            f"{field} contains the invisible character U+{ord(other.group()[0]):04X}",
        )


# --- normalising what the model reads ----------------------------------------
#
# Phrases are matched on the text as a model would understand it, not as it was
# spelled: invisible characters removed, compatibility forms folded (NFKC turns
# fullwidth and mathematical letters into ASCII), look-alike letters from other
# scripts folded to the Latin letters they imitate, and accents dropped.


@functools.cache
def _fold_table() -> dict[int, str]:
    """Each non-ASCII character that imitates an ASCII letter or digit, to that letter.

    From the ``confusable_homoglyphs`` data (Unicode's confusables), letters
    preferred over digits (a Cyrillic ``О`` folds to ``O``, not ``0``) and a letter
    of the same case first. The data folds capital ``I`` and ``l`` alike to ``l``;
    here a capital that looks like either folds to ``I`` (a Greek ``Ι`` in ``Ιgnore``).
    """
    table: dict[int, str] = {}
    for char, glyphs in confusables.confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        targets = [g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii()]
        letters = [t for t in targets if t.isalpha()] or [t for t in targets if t.isalnum()]
        if letters:
            letters.sort(key=lambda t: t.isupper() != char.isupper())
            table[ord(char)] = "I" if letters[0] == "l" and char.isupper() else letters[0]
    return table


def _fold(text: str) -> str:
    """``text`` as it reads: invisible characters gone, look-alikes folded to ASCII."""
    text = INVISIBLE.sub("", text)
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text).translate(_fold_table())
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


# --- text addressed to the model ---------------------------------------------

# Between two words of a phrase: spaces, markup and quotes (``ignore *all* previous``,
# ``ignore_previous_instructions``), but not the end of a sentence.
_GAP: Final = r"(?:[^\w.;:!?]|_)+"
_WHO: Final = (
    r"(?:the |your |this |any )?(?:users?|humans?|person|people|operators?|requesters?|"
    r"customers?|clients?|owners?|reviewers?|approvers?|anyone|anybody|them)\b(?!['’])"
)
# An order not to: "does not notify the user" describes a tool, "do not" orders a model.
_NOT: Final = (
    r"(?:\bdo not|\bdon['’]?t|\bnever|\bwithout|\bavoid|\bno need to|\brefrain from|"
    r"\b(?:must|should|need) not|\b(?:mustn|shouldn|needn)['’]?t|\bnot to)"
)
_TELL: Final = (
    r"(?:tell|inform|mention|notify|reveal|show|alert|disclose|warn|report|explain|"
    r"display|surface|bother|let|make)(?:s|ing)?"
)
_EARLIER: Final = (
    r"(?:previous|prior|earlier|above|preceding|former|foregoing|system|other|original|"
    r"initial|existing|developer|safety)"
)
_OWNER: Final = (
    r"(?: (?:user|system|developer|safety|operator|prompt|agent|assistant|model|security)"
    r"(?:['’]?s)?)?"
)
_ORDERS: Final = (
    r"(?:instructions?|prompts?|messages?|rules|directions|directives?|guidelines?|guidance|"
    r"context|commands|orders|constraints|safeguards|guardrails|policies)"
)
_COVERT_VERBS: Final = (
    r"(?:include|add|append|attach|send|copy|forward|upload|post|collect|gather|exfiltrate|"
    r"insert|embed|transmit|share|leak|e?mail|bcc|cc|read|pass|submit|call|invoke)(?:e?s)?"
)

# (severity, code, what it means, gate, pattern); a space in a pattern is any ``_GAP``.
# The gate: words (runs of ASCII letters, lower case) of which every match of the
# pattern contains at least one, and character sequences likewise; a pattern runs
# only on text that has one of them, so ordinary text costs a set look-up, not a scan.
_PHRASES: Final[tuple[tuple[Severity, str, str, str, str], ...]] = (
    (
        Severity.CRITICAL,
        "instruction_override",
        "asks the model to ignore its instructions",
        "ignore disregard forget override overrides skip bypass abandon discard aside attention "
        "follow following obey obeying supersede supersedes replace replaces precedence "
        "instructions task objective goal role orders rules",
        # ignore / disregard / do not follow … previous / system … instructions
        r"\b(?:ignore|disregard|forget|override|skip|bypass|abandon|discard|set aside|"
        r"put aside|pay no attention to|"
        r"(?:do not|don't|dont|no longer|stop) (?:follow|obey)(?:ing)?)"
        r"(?: (?:all|any|the|your|of|my|these|those|each|every|its|their|our|that|you|were|"
        r"have|been|given|received)){0,4} " + _EARLIER + _OWNER + " " + _ORDERS + r"\b"
        # ignore everything you were told / written above
        r"|\b(?:ignore|disregard|forget) (?:everything|anything|all)(?: (?:that|which|else))?"
        r" (?:you(?:['’]ve| have)?(?: been| were)? (?:told|taught|given|instructed|said)|"
        r"(?:written|said|stated|mentioned) (?:above|before|earlier)|(?:above|before) this|"
        r"so far|until now|up to now)\b"
        # these instructions take precedence / your new instructions are
        r"|\b(?:these|the following|this|my) (?:new )?(?:instructions?|rules|note|message|text)"
        r" (?:override|overrides|supersede|supersedes|replace|replaces|take precedence|"
        r"takes precedence)\b"
        r"|\b(?:overrides?|supersedes?|takes? precedence over|replaces?)(?: all| any)?"
        r" " + _EARLIER + r" (?:instructions|prompts?|system prompt|directives|guidelines)\b"
        r"|\b(?:your|the) (?:new|real|actual|true|updated) (?:instructions|task|objective|goal|"
        r"role|orders|rules) (?:are|is)\b|\bnew (?:system )?instructions ?:",
    ),
    (
        Severity.CRITICAL,
        "concealment",
        "tells the model to hide something from the user",
        "not t dont doesnt neednt shouldnt mustnt wont never without avoid need refrain keep "
        "hide hides hiding conceal conceals concealing withhold withholds withholding behind",
        # do not tell the user / without informing anyone / don't let the user know
        _NOT
        + r" (?:(?:to|be|ever|even|explicitly|need to|have to|bother to|tell or) )*"
        + _TELL
        + r"(?: (?:this|that|it|these|those|anything|any of this|about (?:this|it|that)))?"
        r"(?: (?:to|with))? "
        + _WHO
        # don't mention this / never reveal these instructions
        + r"|"
        + _NOT
        + r" (?:(?:to|ever|even) )*(?:mention|reveal|disclose|bring up|talk about|discuss)"
        r"(?:s|ing)? (?:this|that|it|these|any of (?:this|these|it)|the (?:above|following|"
        r"instructions?|note|step|call|request))\b"
        # the user does not need to know / should never find out
        r"|\b" + _WHO + r" (?:does not|doesn['’]?t|do not|don['’]?t|need not|needn['’]?t|"
        r"should not|shouldn['’]?t|must not|mustn['’]?t|will not|won['’]?t|should never|"
        r"must never|never|is not to|are not to|has no need to|have no need to)"
        r"(?: (?:need|have|ever|even|to))* (?:know|see|notice|find out|learn|hear|care|"
        r"be (?:told|informed|aware|notified|shown|alerted|bothered|made aware))\b"
        # without the user knowing / without their knowledge
        r"|\bwithout " + _WHO + r"(?:['’]s?)? (?:knowing|noticing|seeing|knowledge|awareness|"
        r"realizing|realising|finding out|consent|permission|being (?:told|informed|aware|"
        r"notified))\b|\bwithout (?:their|his|her) (?:knowledge|awareness|consent)\b"
        # keep this secret (from the user) / keep it between us
        r"|\bkeep (?:this|that|it|these|them|the (?:above|following|instructions?|note|step|"
        r"call|request|action)) (?:a )?(?:secret|hidden|between us|to yourself|quiet|"
        r"under wraps)\b|\bkeep (?:\w+ ){1,3}?(?:secret|hidden|private|confidential|away) "
        r"from "
        + _WHO
        +
        # hide it from the user / behind the user's back
        r"|\b(?:hide|conceal|withhold)(?:s|ing)? (?:\w+ ){0,4}?from "
        + _WHO
        + r"|\bbehind (?:the |your )?(?:user|human|operator)['’]?s? back\b",
    ),
    (
        Severity.HIGH,
        "concealment",
        "asks the model to do something covertly",
        "quietly silently secretly covertly discreetly surreptitiously stealthily invisibly "
        "unnoticed",
        r"\b(?:quietly|silently|secretly|covertly|discreetly|surreptitiously|stealthily|"
        r"invisibly|unnoticed)(?: (?:also|and|then|just|always|automatically)){0,2} "
        + _COVERT_VERBS
        + r"\b",
    ),
    (
        Severity.HIGH,
        "secret_request",
        "asks the model to hand over secrets or the conversation",
        "key keys token tokens credentials password passwords secrets cookies prompt history "
        "messages conversation variables vars",
        r"\b(?:include|send|append|attach|pass|add|copy|forward|upload|post|leak|embed|put|"
        r"share)(?:s|ing)?(?: \w+){0,3}? (?:(?:all|any|every)"
        r" (?:of )?(?:the |your )?(?:api keys?|secret keys?|access tokens?|tokens|credentials|"
        r"passwords?|secrets|private keys?|ssh keys?|cookies|environment variables|env vars)|"
        r"(?:the |your |its )?(?:full |entire |whole |complete )?(?:system prompt|"
        r"conversation history|chat history|message history|previous messages|"
        r"(?:full|entire|whole) conversation))\b",
    ),
    (
        Severity.HIGH,
        "model_tag",
        "wraps text in a tag addressed to the model",
        "important system systemprompt prompt instruction instructions secret hidden admin "
        "assistant override sys",
        r"</?\s*(?:important|system|system[_-]?prompt|instructions?|secret|hidden|admin|"
        r"assistant|override|sys)\s*>",
    ),
    (
        Severity.HIGH,
        "role_header",
        "imitates a system or assistant message",
        "system assistant developer inst sys <|",
        r"(?m)^\s*(?:#+\s*)?(?:system|assistant|developer)\s*:|<\|[a-z_]*\|>|\[/?INST\]|<</?SYS>>",
    ),
    (
        Severity.HIGH,
        "sensitive_file",
        "points the model at credentials",
        "ssh id credentials shadow",
        r"~/\.ssh|\bid_(?:rsa|ed25519|ecdsa)\b|\.aws/credentials|/etc/shadow",
    ),
    (
        Severity.MEDIUM,
        "secret_reference",
        "mentions where secrets are kept",
        "env mcp api apikey apikeys passwd",
        r"(?<![\w.])\.env\b|\bmcp\.json\b|\bapi[_\s-]?keys?\b|/etc/passwd",
    ),
    (
        Severity.MEDIUM,
        "addressed_to_model",
        "gives orders to the model rather than describing the tool",
        "you before after must should",
        r"\byou\s+(?:must|have\s+to|need\s+to|are\s+required\s+to|should\s+always)\b|"
        r"\b(?:before|after)\s+(?:using|calling)\s+(?:this|any)\s+tool\b|"
        r"\b(?:AI|assistant|model|LLM)\s*,?\s+(?:must|should)\b|\bfrom now on,? you\b",
    ),
)
_WORDS = re.compile(r"[a-z]+")


def _gate(spec: str) -> tuple[frozenset[str], tuple[str, ...]]:
    parts = spec.split()
    return frozenset(p for p in parts if p.isalpha()), tuple(p for p in parts if not p.isalpha())


_PHRASE_RE: Final = tuple(
    (severity, code, what, *_gate(gate), re.compile(pattern.replace(" ", _GAP), re.IGNORECASE))
    for severity, code, what, gate, pattern in _PHRASES
)

# A link whose query or path is a template the model fills in sends data out.
_URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s\"'<>]+", re.IGNORECASE)
_TEMPLATE = re.compile(r"\{\{?[^{}]*\}\}?|\$\{?[A-Za-z_]+\}?|%[sd]|<[A-Za-z_ ]+>|\[[A-Z_ ]+\]")
_EMPTY_PARAMETER = re.compile(r"[?&][^=&]+=(?:$|&)")


_ANY_GATE_WORD: Final = frozenset().union(*(entry[3] for entry in _PHRASE_RE))
_ANY_GATE_CHARS: Final = tuple(c for entry in _PHRASE_RE for c in entry[4])


def _phrase_hits(text: str) -> Iterator[tuple[Severity, str, str, str]]:
    lowered = text.lower()
    words = _ANY_GATE_WORD.intersection(_WORDS.findall(lowered))
    chars = [c for c in _ANY_GATE_CHARS if c in lowered]
    if not words and not chars:
        return
    for severity, code, what, gate_words, gate_chars, pattern in _PHRASE_RE:
        if gate_words.isdisjoint(words) and not any(c in chars for c in gate_chars):
            continue
        match = pattern.search(text)
        if match:
            yield severity, code, what, " ".join(match.group().split())[:80]


def _link_hits(text: str, *, plain_links: bool) -> Iterator[tuple[Severity, str, str]]:
    if "://" not in text:
        return
    for match in _URL.finditer(text):
        url = match.group()
        if _TEMPLATE.search(url) or _EMPTY_PARAMETER.search(url):
            yield (
                Severity.HIGH,
                "exfiltration_link",
                f"holds a link with a placeholder the model would fill in, a way to send data "
                f"out: {url[:120]!r}",
            )
        elif plain_links:
            yield Severity.LOW, "link", f"holds a link: {url[:120]!r}"


# --- encoded text -------------------------------------------------------------
#
# Base64, hex, percent, entity and ``\\u`` escaped text is decoded and the decoded
# text is scanned like the rest, two levels deep (base64 inside base64). Only
# decoded text that is mostly printable letters is kept: random bytes, hashes and
# binary payloads are not text. Bounded, and closed when the bound is reached: a
# run is decoded on its first MAX_ENCODED_RUN characters, and a string with more
# than MAX_ENCODED_RUNS runs that decode to text, or a run too long to decode
# whole that starts as text, is a finding that holds the tool.

MAX_ENCODED_RUN: Final = 65_536
MAX_ENCODED_RUNS: Final = 16
MIN_DECODED_CHARS: Final = 8
_DECODE_DEPTH: Final = 2

_ENCODED_RUN = re.compile(
    r"(?P<b64>[A-Za-z0-9+/_-]{16,}={0,2})"
    r"|(?P<hex>(?:(?:\\x|0x)[0-9A-Fa-f]{2}[\s,]*){8,}|(?:[0-9A-Fa-f]{2}[ :,-]){7,}[0-9A-Fa-f]{2})"
)
_HEX_DIGITS = re.compile(r"[0-9A-Fa-f]+")
_HEX_RUN = re.compile(r"(?:0x)?[0-9A-Fa-f]+")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}|&#?\w+;|\\u[0-9A-Fa-f]{4}")
_UNICODE_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
_LETTER_OR_SPACE = re.compile(r"[^\W\d_]|\s")


def _readable(data: bytes) -> str | None:
    """``data`` as text when it is mostly printable letters, else None."""
    if len(data) < MIN_DECODED_CHARS:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    size = len(text)
    if len(_UNPRINTABLE.findall(text)) * 20 > size:  # more than 5 % control characters
        return None
    if len(_LETTER_OR_SPACE.findall(text)) * 5 < size * 3:  # under 60 % letters and spaces
        return None
    return text


def _base64(run: str) -> str | None:
    run = run.rstrip("=")
    if "-" in run or "_" in run:
        if "+" in run or "/" in run:
            return None
        alphabet = b"-_"
    else:
        alphabet = b"+/"
    # A run glued to a word may start off the 4-character grid: try each offset.
    for offset in range(4):
        body = run[offset:]
        body = body[: len(body) - len(body) % 4 or None] if len(body) % 4 == 1 else body
        try:
            data = base64.b64decode(body + "=" * (-len(body) % 4), altchars=alphabet, validate=True)
        except (binascii.Error, ValueError):
            continue
        text = _readable(data)
        if text is not None:
            return text
    return None


def _hex(run: str) -> str | None:
    digits = "".join(
        _HEX_DIGITS.findall(run.replace("\\x", " ").replace("0x", " ").replace("0X", " "))
    )
    if len(digits) % 2:
        digits = digits[:-1]
    try:
        return _readable(bytes.fromhex(digits))
    except ValueError:
        return None


def _unescape(text: str) -> str:
    if "%" in text:
        text = urllib.parse.unquote(text, errors="replace")
    if "&" in text:
        text = html.unescape(text)
    if "\\u" in text:
        text = _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return text


def _decoded(text: str, depth: int = 1) -> Iterator[tuple[str, str]]:
    """(how it was encoded, decoded text) for each encoded run in ``text``.

    An empty ``how`` marks text left unchecked at a bound; the second item then
    says which.
    """
    if _ESCAPE.search(text):
        plain = _unescape(text)
        if plain != text:
            yield "percent or entity escapes", plain
            text = plain
    runs = 0
    for match in _ENCODED_RUN.finditer(text):
        whole = match.group()
        run = whole[:MAX_ENCODED_RUN]
        decoded: str | None = None
        kind = "hex"
        if match.lastgroup == "hex" or _HEX_RUN.fullmatch(run):
            decoded = _hex(run)
        if decoded is None and match.lastgroup == "b64":
            kind, decoded = "base64", _base64(run)
        if decoded is None:
            continue
        if runs == MAX_ENCODED_RUNS:
            yield "", f"more than {MAX_ENCODED_RUNS} encoded runs that decode to text"
            return
        runs += 1
        decoded = _fold(decoded)
        yield kind, decoded
        if len(whole) > MAX_ENCODED_RUN:
            yield "", f"a {kind} run of {len(whole):,} characters that decodes to text"
        if depth < _DECODE_DEPTH:
            for inner_kind, inner in _decoded(decoded, depth + 1):
                yield (f"{inner_kind} inside {kind}" if inner_kind else ""), inner


# --- one string ----------------------------------------------------------------

_WORD = re.compile(r"[^\W\d_]+")


def _mixed_script(field: str, text: str) -> Iterator[Finding]:
    """A word spelled in Latin letters with a look-alike from another script among them."""
    table = _fold_table()
    for match in _WORD.finditer(unicodedata.normalize("NFKC", INVISIBLE.sub("", text))):
        word = match.group()
        if word.isascii() or not any(ch.isascii() for ch in word):
            continue
        if any(ord(ch) in table for ch in word) and confusables.is_mixed_script(word):
            yield Finding(
                Severity.MEDIUM,
                "mixed_script",
                field,
                f"{field} spells {word[:40]!r} with look-alike letters from another script; "
                f"it reads as {word.translate(table)[:40]!r}",
            )
            return


def scan_text(field: str, text: str, *, links: bool = True) -> list[Finding]:
    """Findings in one string a model reads.

    The text is checked as spelled for hidden characters, and as it reads
    (invisible characters removed, look-alike and compatibility letters folded)
    for phrases and links; encoded runs in it are decoded and checked too, and a
    run that decodes to plain prose is shown. ``links=False`` for a JSON Schema's
    ``$schema`` and ``$id``: identifiers, not links a model follows (a link with a
    placeholder is still found).
    """
    findings = list(_hidden(field, text))
    if not text.isascii():
        findings.extend(_mixed_script(field, text))
    plain = _fold(text)
    for severity, code, what, quoted in _phrase_hits(plain):
        findings.append(Finding(severity, code, field, f"{field} {what}: {quoted!r}"))
    for severity, code, reason in _link_hits(plain, plain_links=links):
        findings.append(Finding(severity, code, field, f"{field} {reason}"))
    decodings = list(_decoded(plain))
    if not decodings:
        return findings
    found = {f.code for f in findings}  # decoded text adds only what is new

    def add(severity: Severity, code: str, reason: str) -> None:
        if code not in found:
            found.add(code)
            findings.append(Finding(severity, code, field, reason))

    prose: tuple[str, str] | None = None
    decoded_hit = False
    for kind, decoded in decodings:
        if not kind:
            add(
                Severity.HIGH,
                "encoded_unchecked",
                f"{field} holds {decoded}, past what the scan decodes; the rest cannot be "
                "checked, so it is held",
            )
            continue
        hit = False
        for severity, code, what, quoted in _phrase_hits(decoded):
            hit = True
            add(severity, code, f"{field} {what} ({kind}): {quoted!r}")
        for severity, code, reason in _link_hits(decoded, plain_links=False):
            hit = True
            add(severity, code, f"{field} {reason} ({kind})")
        decoded_hit = decoded_hit or hit
        if prose is None and not hit and "escapes" not in kind:
            prose = (kind, decoded)
    if prose is not None and not decoded_hit:
        add(
            Severity.LOW,
            "encoded_text",
            f"{field} holds {prose[0]} that decodes to text: {prose[1][:80]!r}",
        )
    return findings


# --- walking a definition ----------------------------------------------------

# A JSON Schema names its dialect and itself with URLs nobody follows.
_SCHEMA_IDENTIFIERS: Final = frozenset({"$schema", "$id"})


class _TooDeepError(ValueError):
    pass


def _strings(node: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str, bool]]:
    if depth > MAX_DEPTH:
        raise _TooDeepError(path)
    if isinstance(node, str):
        yield path, node, True
    elif isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(key, str):
                yield f"{path} (key)", key, True
            if key in _SCHEMA_IDENTIFIERS and isinstance(value, str):
                yield f"{path}.{key}", value, False
            else:
                yield from _strings(value, f"{path}.{key}", depth + 1)
    elif isinstance(node, list | tuple):
        for index, item in enumerate(node):
            yield from _strings(item, f"{path}[{index}]", depth + 1)


def _definition_texts(tool: UpstreamTool) -> Iterator[tuple[str, str, bool]]:
    if tool.title:
        yield "title", tool.title, True
    yield "description", tool.description, True
    yield from _strings(tool.input_schema, "input_schema")
    if tool.output_schema is not None:
        yield from _strings(tool.output_schema, "output_schema")
    for field, text, _links in _strings(tool.annotations, "annotations"):
        yield field, text, True


_HEADLINE_FIELDS: Final = frozenset({"title", "description", "annotations.title"})


def _across_fields(tool: UpstreamTool, found: set[str]) -> Iterator[Finding]:
    """Phrases split between a title and the description, which a model reads as one text.

    Codes already found in one of those fields alone are not repeated.
    """
    titles = {"title": tool.title, "annotations.title": tool.annotations.get("title")}
    for field, title in titles.items():
        if not isinstance(title, str) or not title.strip() or not tool.description.strip():
            continue
        joined = _fold(f"{title}\n{tool.description}")
        for severity, code, what, quoted in _phrase_hits(joined):
            if code not in found:
                found.add(code)
                yield Finding(
                    severity,
                    code,
                    f"{field} + description",
                    f"the {field} followed by the description {what}: {quoted!r}",
                )


# --- names --------------------------------------------------------------------

_SEPARATORS = re.compile(r"[\s_\-.:/]+")


@functools.lru_cache(maxsize=4096)
def _loose_skeleton(name: str) -> str:
    """Look-alike key that also ignores separators (``read-file`` ~ ``read_file``)."""
    return _SEPARATORS.sub("", name_skeleton(name))


def _name_findings(
    tool: UpstreamTool, others: Iterable[str], builtins: Iterable[str]
) -> Iterator[Finding]:
    name = tool.name
    bad = next((ch for ch in name if unicodedata.category(ch)[0] in "CZ"), None)
    if bad is not None:
        yield Finding(
            Severity.CRITICAL,
            "name_hidden_character",
            "name",
            f"the name {name!r} contains the whitespace, control or invisible character "
            f"U+{ord(bad):04X}",
        )
    if confusables.is_dangerous(name):
        yield Finding(
            Severity.HIGH,
            "name_homoglyph",
            "name",
            f"the name {name!r} mixes scripts with look-alike letters (a homoglyph): it reads "
            f"as {name_skeleton(name)!r}",
        )
    elif not name.isascii():
        yield Finding(
            Severity.MEDIUM,
            "name_non_ascii",
            "name",
            f"the name {name!r} has letters outside ASCII; check it is not meant to look like "
            "another",
        )
    key = name_key(name)
    looks = {_loose_skeleton(name), _loose_skeleton(tool.contract_name)}
    for builtin in builtins:
        if name_key(builtin) == key:
            yield Finding(
                Severity.MEDIUM,
                "shadows_builtin",
                "name",
                f"the tool has the name of the built-in tool {builtin!r}; agents see it as "
                f"{tool.contract_name!r}, but a model may take one for the other",
            )
        elif _loose_skeleton(builtin) in looks:
            yield Finding(
                Severity.HIGH,
                "imitates_builtin",
                "name",
                f"{tool.contract_name!r} looks like the built-in tool {builtin!r} (case, "
                "separators or look-alike letters)",
            )
    own_key, own_loose = name_key(tool.contract_name), _loose_skeleton(tool.contract_name)
    for other in others:
        if name_key(other) == own_key:
            yield Finding(
                Severity.CRITICAL,
                "duplicate_name",
                "name",
                f"{tool.contract_name!r} is listed more than once (names compared without case)",
            )
        elif _loose_skeleton(other) == own_loose:
            yield Finding(
                Severity.HIGH,
                "imitates_tool",
                "name",
                f"{tool.contract_name!r} looks like the tool {other!r} (case, separators or "
                "look-alike letters)",
            )


def scan_tool(
    tool: UpstreamTool, *, others: Iterable[str] = (), builtins: Iterable[str] = ()
) -> list[Finding]:
    """Every finding for ``tool``, worst first.

    ``others``: contract names (``<server>__<tool>``) of the other tools an agent
    could see beside it, from this server and the others; ``builtins``: the
    console's own tool names.
    """
    findings = list(_name_findings(tool, others, builtins))
    try:
        texts = list(_definition_texts(tool))
    except _TooDeepError as exc:
        texts = []
        findings.append(
            Finding(
                Severity.CRITICAL,
                "unreadable",
                str(exc),
                f"the definition nests deeper than {MAX_DEPTH} levels at {exc}; it cannot be "
                "checked, so it is held",
            )
        )
    headline: set[str] = set()
    for field, text, links in texts:
        found = scan_text(field, text, links=links)
        if field in _HEADLINE_FIELDS:
            headline.update(f.code for f in found)
        findings.extend(found)
    findings.extend(_across_fields(tool, headline))
    return sorted(findings, key=lambda f: -f.severity)


def blocking(findings: Iterable[Finding], threshold: Severity) -> list[Finding]:
    """The findings at or above ``threshold``: each alone holds the tool."""
    return [f for f in findings if f.severity >= threshold]
