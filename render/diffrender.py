"""A diff file's table rows as HTML, built in Python: the Django template engine costs ~50 µs a
row, which a 5,000-line diff turns into most of a page's time (bench/proposal_page.py).

The markup is the one templates/repos/_diff.html had in its loop, and the escaping the same
as autoescape's: every text from the repository goes through html.escape; a line's `html` and
`after` are SafeStrings their makers built by escaping (render.diffs.Line)."""

from __future__ import annotations

from html import escape

from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from render.diffs import FileDiff

_SIGN = {"add": "+", "del": "-", "context": " "}


def file_rows(f: FileDiff) -> str:
    """The <tr>s of one file's hunks (a plain str of escaped HTML)."""
    out: list[str] = []
    for h in f.hunks:
        out.append(
            '<tr class="hunk"><td class="ln"></td><td class="ln"></td>'
            f'<td class="code">{escape(h.header)} {escape(h.section)}</td></tr>'
        )
        for line in h.lines:
            old = "" if line.old is None else line.old
            new = "" if line.new is None else line.new
            # As autoescape would: SafeStrings as they are, anything else escaped.
            code = conditional_escape(line.html) if line.html else escape(line.text)
            out.append(
                f'<tr class="{line.kind}"><td class="ln">{old}</td><td class="ln">{new}</td>'
                f'<td class="code">{_SIGN.get(line.kind, "")}{code}</td></tr>'
            )
            if line.after:
                out.append(
                    f'<tr class="annotation"><td colspan="3">{conditional_escape(line.after)}</td></tr>'
                )
    return "".join(out)


def rows_html(f: FileDiff) -> SafeString:
    """The file's rows: rendered once when the diff was cached (repos.diffcache), again only
    when the page attached something below a line."""
    cached = getattr(f, "rows", None)
    if cached is not None and not any(line.after for h in f.hunks for line in h.lines):
        return mark_safe(cached)  # noqa: S308 - built by file_rows, from escaped text only
    return mark_safe(file_rows(f))  # noqa: S308 - built from escaped text only
