"""Turning repository documents into HTML: READMEs and Markdown files, sanitized by nh3.
(Source files are highlighted into rows by render.blobrender, diffs by render.diffhighlight.)"""

from __future__ import annotations

import posixpath
import threading
from typing import Protocol, TypeVar
from urllib.parse import quote, urlsplit

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

from render import imageproxy

MARKDOWN_NAMES = (".md", ".markdown", ".mdown", ".mkd")
# README candidates in the order they are preferred, compared case-insensitively.
README_NAMES = ("readme.md", "readme.markdown", "readme", "readme.txt", "readme.rst", "readme.mdown")

ALLOWED_TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "dd",
    "del",
    "details",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "ins",
    "kbd",
    "li",
    "ol",
    "p",
    "pre",
    "q",
    "s",
    "samp",
    "span",
    "strike",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "tt",
    "ul",
    "var",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "name"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"align"},
    "th": {"align"},
    "abbr": {"title"},
    "ol": {"start"},
    "code": {"class"},
    "details": {"open"},
}
URL_SCHEMES = {"http", "https", "mailto"}


def is_markdown(name: str) -> bool:
    return name.lower().endswith(MARKDOWN_NAMES)


class Listed(Protocol):
    """What find_readme reads of a directory's entry (repos.browse.Entry is one)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def is_link(self) -> bool: ...


E = TypeVar("E", bound=Listed)


def find_readme(entries: list[E]) -> E | None:
    """The README among a directory's entries (blobs only), by README_NAMES order."""
    blobs = {e.name.lower(): e for e in entries if e.kind == "blob" and not e.is_link}
    return next((blobs[n] for n in README_NAMES if n in blobs), None)


_converters = threading.local()


def _markdown_converter(breaks: bool) -> markdown.Markdown:
    """One converter per thread and flavour, reset between texts: building one registers its
    extensions anew, 2 ms each, which a page of 100 comments paid 100 times
    (bench/proposal_page.py). Not shared between threads: a converter keeps state while it
    converts."""
    name = "markdown_breaks" if breaks else "markdown"
    converter = getattr(_converters, name, None)
    if converter is None:
        extensions = ["fenced_code", "tables", "sane_lists", *(["nl2br"] if breaks else [])]
        converter = markdown.Markdown(extensions=extensions, output_format="html")
        setattr(_converters, name, converter)
    return converter


def render_markdown(
    text: str, *, directory: str, blob_base: str, raw_base: str, breaks: bool = False
) -> SafeString:
    """Markdown to sanitized HTML. Relative links point to the repository's file view
    (`blob_base`), relative images to raw content (`raw_base`), both resolved against the
    README's `directory`; anything that would climb out of the tree is dropped. `breaks`: every
    newline is a line break, as in GitHub's pull request descriptions."""
    html = _markdown_converter(breaks).reset().convert(text)
    return sanitize(html, directory=directory, blob_base=blob_base, raw_base=raw_base)


def sanitize(html: str, *, directory: str, blob_base: str, raw_base: str) -> SafeString:
    """HTML from any document renderer made safe (nh3), with links rewritten as for Markdown:
    relative ones into the repository, external images through the image proxy."""

    def rewrite(element: str, attribute: str, value: str) -> str | None:
        if attribute not in ("href", "src"):
            return value
        if element == "img" and attribute == "src" and (proxied := imageproxy.rewrite_src(value)):
            return proxied  # the page's CSP allows only our own origin's images
        parts = urlsplit(value)
        if parts.scheme or parts.netloc or value.startswith(("#", "/")) or not parts.path:
            return value  # absolute, anchors and root paths are left to nh3's scheme check
        joined = posixpath.normpath(posixpath.join(directory, parts.path))
        if joined.startswith("..") or joined == ".":
            return None
        base = raw_base if element == "img" else blob_base
        url = f"{base}/{quote(joined)}"
        return (
            url
            + (f"?{parts.query}" if parts.query else "")
            + (f"#{parts.fragment}" if parts.fragment else "")
        )

    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="nofollow noopener",
        attribute_filter=rewrite,
        strip_comments=True,
    )
    return mark_safe(clean)  # noqa: S308 - sanitized by nh3 just above
