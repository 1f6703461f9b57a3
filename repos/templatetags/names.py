"""`{{ name|visible }}`: a file or ref name with its invisible characters made visible.

A bidirectional override (U+202E) can make `refs/heads/evil\u202egnp.exe` display as
something else, and a zero-width space makes two names that look the same differ. Pushes of
such ref names are refused (repos/hooks/pushpolicy.py), but older refs and any file name may still
hold them: they are shown, never hidden, each invisible character as a marked `\\u202e` escape
whose title names it. A ref name's bytes that are not UTF-8 (an imported ref's, kept as lone
surrogates so git gets the name back) show as `\xe9` escapes, as a push of such a name is
refused. `{{ name|visible_text }}` is the same without markup, for <title>.
"""

from __future__ import annotations

import unicodedata

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from repos.hooks.refnames import INVISIBLE, UNDECODABLE

register = template.Library()

# Controls too: a file name may hold a tab or a newline, which a page would fold into a space.
# And bytes that are not UTF-8: no page can be encoded with them.
ESCAPED = INVISIBLE | frozenset(range(0x20)) | {0x7F} | frozenset(UNDECODABLE)


def _escape(cp: int) -> str:
    if cp in UNDECODABLE:
        return f"\\x{cp - 0xDC00:02x}"
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def _title(cp: int) -> str:
    if cp in UNDECODABLE:
        return f"byte {cp - 0xDC00:#04x}, not UTF-8"
    name = unicodedata.name(chr(cp), "")
    return f"U+{cp:04X} {name}".strip()


def has_invisible(value) -> bool:
    return any(ord(c) in ESCAPED for c in str(value))


@register.filter(needs_autoescape=True)
def visible(value, autoescape=True):
    if value is None:
        return ""
    text = str(value)
    escape = conditional_escape if autoescape else str
    if not has_invisible(text):
        return escape(text)
    parts = []
    for char in text:
        cp = ord(char)
        if cp in ESCAPED:
            parts.append(
                format_html('<span class="invisible-char" title="{}">{}</span>', _title(cp), _escape(cp))
            )
        else:
            parts.append(escape(char))
    return mark_safe("".join(parts))  # noqa: S308 - every part is escaped above


@register.filter
def visible_text(value) -> str:
    if value is None:
        return ""
    return "".join(_escape(ord(c)) if ord(c) in ESCAPED else c for c in str(value))
