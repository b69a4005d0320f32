"""``{{ text|card_line }}`` and ``{{ text|card_block }}``: a card's text, escaped, with the
characters a person could not see or could misread marked where they stand.

``card_line`` is for one-line values (the effect line, facts, arguments, headers): a
line break, a tab or any invisible character is shown by its escape, and every
look-alike letter is marked. ``card_block`` is for running text (a file, a body,
SQL, a diff line): line breaks and tabs are its own shape, other invisible
characters are shown by their escape, look-alikes marked inside Latin words.
Everything else is escaped text: nothing a call carries becomes markup.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from approvals_app.cards.characters import Mode, segments

register = template.Library()


def flagged_html(text: Any, mode: Mode) -> SafeString:
    """``text`` escaped, each flagged character in a ``<mark>`` that names it."""
    value = text if isinstance(text, str) else str(text)
    parts: list[str] = []
    for segment in segments(value, mode):
        if segment.flag is None:
            parts.append(escape(segment.text))
        else:
            flag = segment.flag
            parts.append(
                format_html(
                    '<mark class="char-flag char-{}" data-char="{}" title="{}">{}</mark>',
                    flag.kind,
                    flag.code,
                    flag.describe(),
                    flag.shown,
                )
            )
    return mark_safe("".join(parts))  # noqa: S308 - every part above is escaped


@register.filter
def card_line(text: Any) -> SafeString:
    return flagged_html(text, "line")


@register.filter
def card_block(text: Any) -> SafeString:
    return flagged_html(text, "block")


_DIFF_MARKS = {"add": "+", "del": "-", "ctx": " "}


@register.filter
def diff_line(line: Any) -> SafeString:
    """One diff line: its mark (``+``, ``-``, a blank) and its text; a gap line, which the
    card writes itself, plain."""
    kind = line.kind if line.kind in ("add", "del", "ctx", "hunk", "gap") else "ctx"
    text = escape(line.text) if kind == "gap" else flagged_html(line.text, "block")
    return format_html('<span class="d-{}">{}{}</span>', kind, _DIFF_MARKS.get(kind, ""), text)
