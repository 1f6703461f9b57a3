"""Jupyter notebooks (nbformat 4) rendered read-only; nothing in them is ever run.

The JSON is parsed here, without nbformat, and no field's type is trusted: anything that is not
what nbformat 4 says (or a notebook past the caps) is shown as source with a note. Markdown cells
go through render_markdown, code is highlighted by Pygments in the notebook's language, text
outputs are escaped with their ANSI colour codes removed, PNG and JPEG outputs become data: URIs
(checked as base64 and by their first bytes), and HTML outputs are sanitized like READMEs.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from django.templatetags.static import static
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from render import imageproxy, rendering

MAX_CELLS = 2000
MAX_OUTPUTS = 2000  # in the whole notebook
MAX_OUTPUT_CHARS = 20_000  # of one text output; the rest is cut with a note
IMAGE_TYPES = ("image/png", "image/jpeg")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class Unreadable(Exception):
    """Not a notebook we render; the message says why, for the note above the source."""


def _dict(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise Unreadable(f"{what} is not an object.")
    return value


def _list(value, what: str) -> list:
    if not isinstance(value, list):
        raise Unreadable(f"{what} is not a list.")
    return value


def _text(value, what: str) -> str:
    """nbformat's multiline strings: a string or a list of strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    raise Unreadable(f"{what} is not text.")


def _lexer(metadata: dict):
    info, kernel = metadata.get("language_info"), metadata.get("kernelspec")
    names = [
        info.get("name") if isinstance(info, dict) else None,
        kernel.get("language") if isinstance(kernel, dict) else None,
    ]
    for name in names:
        if isinstance(name, str) and 0 < len(name) < 40:
            try:
                return get_lexer_by_name(name.lower(), stripnl=False, ensurenl=False)
            except ClassNotFound:
                continue
    return TextLexer(stripnl=False, ensurenl=False)


def _plain(text: str, css: str) -> str:
    """Output text: ANSI codes and control characters removed, cut at MAX_OUTPUT_CHARS, escaped."""
    text = _CONTROL.sub("", _ANSI.sub("", text))
    cut = ""
    if len(text) > MAX_OUTPUT_CHARS:
        more = len(text) - MAX_OUTPUT_CHARS
        text, cut = text[:MAX_OUTPUT_CHARS], f'<p class="muted nb-cut">{more} more characters not shown.</p>'
    return f'<pre class="nb-output {css}">{escape(text)}</pre>{cut}'


def _image(content_type: str, value) -> str | None:
    data = re.sub(r"\s+", "", _text(value, "An image output"))
    if not _BASE64.fullmatch(data):
        return None
    try:
        head = base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4))
    except (binascii.Error, ValueError):
        return None
    if not imageproxy.sniff(content_type, head):
        return None
    return f'<img class="nb-image" alt="output" src="data:{content_type};base64,{data}">'


def _rich(data: dict, bases: dict) -> str:
    """The best of a display's representations we can show safely."""
    for content_type in IMAGE_TYPES:
        if content_type in data and (html := _image(content_type, data[content_type])):
            return html
    if "text/html" in data:
        return f'<div class="nb-output nb-html">{rendering.sanitize(_text(data["text/html"], "HTML output"), **bases)}</div>'
    if "text/markdown" in data:
        return f'<div class="nb-output">{rendering.render_markdown(_text(data["text/markdown"], "Markdown output"), **bases)}</div>'
    if "text/plain" in data:
        return _plain(_text(data["text/plain"], "A text output"), "")
    return ""


def _output(output, bases: dict) -> str:
    output = _dict(output, "An output")
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name")
        return _plain(_text(output.get("text", ""), "A stream"), "nb-stderr" if name == "stderr" else "")
    if kind in ("execute_result", "display_data"):
        return _rich(_dict(output.get("data", {}), "An output's data"), bases)
    if kind == "error":
        lines = _list(output.get("traceback", []), "A traceback")
        if not all(isinstance(line, str) for line in lines):
            raise Unreadable("A traceback is not text.")
        if not lines:
            lines = [
                f"{_text(output.get('ename', ''), 'An error')}: {_text(output.get('evalue', ''), 'An error')}"
            ]
        return _plain("\n".join(lines), "nb-error")
    raise Unreadable("An output has an unknown type.")


def _cell(cell, lexer, formatter, bases: dict, budget: list[int]) -> str:
    cell = _dict(cell, "A cell")
    kind = cell.get("cell_type")
    source = _text(cell.get("source", ""), "A cell's source")
    if kind == "markdown":
        return f'<div class="nb-cell nb-markdown">{rendering.render_markdown(source, **bases)}</div>'
    if kind == "raw":
        return f'<div class="nb-cell"><pre class="nb-raw">{escape(source)}</pre></div>'
    if kind != "code":
        raise Unreadable("A cell has an unknown type.")
    count = cell.get("execution_count")
    prompt = f"[{count}]" if type(count) is int else "[ ]"
    outputs = _list(cell.get("outputs", []), "A cell's outputs")
    budget[0] -= len(outputs)
    if budget[0] < 0:
        raise Unreadable(f"This notebook has more than {MAX_OUTPUTS} outputs.")
    shown = "".join(_output(output, bases) for output in outputs)
    code = highlight(source, lexer, formatter)  # Pygments escapes every token
    return (
        f'<div class="nb-cell nb-code"><div class="nb-prompt">In&nbsp;{prompt}:</div>'
        f'<div class="nb-input">{code}</div></div>'
        + (f'<div class="nb-outputs">{shown}</div>' if shown else "")
    )


def _render(nb, bases: dict) -> str:
    nb = _dict(nb, "The notebook")
    if type(nb.get("nbformat")) is not int or nb["nbformat"] != 4:
        raise Unreadable("Only nbformat 4 notebooks are rendered.")
    metadata = _dict(nb.get("metadata", {}), "The notebook's metadata")
    cells = _list(nb.get("cells"), "The notebook's cell list")
    if len(cells) > MAX_CELLS:
        raise Unreadable(f"This notebook has more than {MAX_CELLS} cells.")
    lexer, formatter = _lexer(metadata), HtmlFormatter(cssclass="highlight", wrapcode=True)
    budget = [MAX_OUTPUTS]
    body = "".join(_cell(cell, lexer, formatter, bases, budget) for cell in cells)
    styles = "".join(
        f'<link rel="stylesheet" href="{escape(static(name))}">'
        for name in ("css/pygments.css", "css/documents.css")
    )
    return f'{styles}<div class="notebook">{body}</div>'


def render_notebook(text: str, *, directory: str, blob_base: str, raw_base: str) -> SafeString:
    """The notebook as HTML; Unreadable says why it cannot be rendered."""
    try:
        nb = json.loads(text)
    except (ValueError, RecursionError):
        raise Unreadable("This notebook is not valid JSON.") from None
    html = _render(nb, {"directory": directory, "blob_base": blob_base, "raw_base": raw_base})
    return mark_safe(html)  # noqa: S308 - every piece is escaped, sanitized or Pygments' output
