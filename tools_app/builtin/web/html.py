"""PURE: readable text and absolute links from an HTML document (stdlib parser, no scripts run)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Final
from urllib.parse import urljoin, urlsplit

_SKIPPED: Final = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe"})
_BLOCKS: Final = frozenset(
    {
        "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
        "footer", "nav", "aside", "main", "h1", "h2", "h3", "h4", "h5", "h6", "pre",
        "blockquote", "hr", "dt", "dd", "form", "title", "figcaption",
    }
)  # fmt: skip
_VOID: Final = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "wbr"})
_LINK_SCHEMES: Final = frozenset({"http", "https"})


@dataclass(frozen=True, slots=True)
class Link:
    """One hyperlink: its absolute URL and its visible text."""

    url: str
    text: str


@dataclass
class _Document(HTMLParser):
    base_url: str = ""
    parts: list[str] = field(default_factory=list)
    title_parts: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    _skip_depth: int = 0
    _in_title: bool = False
    _anchor: tuple[str, list[str]] | None = None

    def __post_init__(self) -> None:
        HTMLParser.__init__(self, convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "title":
            self._in_title = True
        elif tag == "base" and values.get("href") and not self.links:
            joined = urljoin(self.base_url, values["href"].strip())
            if urlsplit(joined).scheme in _LINK_SCHEMES:
                self.base_url = joined
        if tag in _SKIPPED and tag not in _VOID:
            self._skip_depth += 1
        if tag in _BLOCKS:
            self.parts.append("\n")
        if tag == "a" and "href" in values:
            self._anchor = (values["href"], [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIPPED and self._skip_depth:
            self._skip_depth -= 1
        if tag in _BLOCKS:
            self.parts.append("\n")
        if tag == "a" and self._anchor is not None:
            href, words = self._anchor
            self._anchor = None
            url = urljoin(self.base_url, href.strip()).split("#", 1)[0]
            if urlsplit(url).scheme in _LINK_SCHEMES:
                self.links.append(Link(url, _collapse(" ".join(words))))

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        if self._skip_depth:
            return
        self.parts.append(data)
        if self._anchor is not None:
            self._anchor[1].append(data)


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _parse(html: str, base_url: str) -> _Document:
    document = _Document(base_url=base_url)
    document.feed(html)
    document.close()
    return document


def html_title(html: str) -> str:
    """The document's <title>, whitespace collapsed ('' when absent)."""
    return _collapse(" ".join(_parse(html, "").title_parts))


def html_to_text(html: str) -> str:
    """Visible text: scripts, styles and the head dropped, one block per line."""
    raw = "".join(_parse(html, "").parts)
    lines = (_collapse(line) for line in raw.split("\n"))
    return "\n".join(line for line in lines if line)


def extract_links(html: str, base_url: str) -> list[Link]:
    """Every http(s) link, made absolute against ``base_url`` (or <base>), first seen first."""
    seen: dict[str, Link] = {}
    for link in _parse(html, base_url).links:
        seen.setdefault(link.url, link)
    return list(seen.values())
