"""Documents shown rendered on README and file pages: Markdown, reStructuredText and Jupyter
notebooks, all sanitized by render.rendering.sanitize (nh3; relative links into the repository,
external images through the image proxy).

`render_document` is the one entry point. A document that cannot be rendered (broken markup,
too slow, a hostile notebook) comes back as its source with a note, never as an error.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from functools import cache as memoize
from importlib.metadata import version
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.utils.html import format_html
from django.utils.safestring import SafeString

from render import notebooks, rendering

RST_NAMES = (".rst", ".rest")
NOTEBOOK_NAMES = (".ipynb",)
RST_WORKER = Path(__file__).with_name("rstworker.py")
# Rendered reStructuredText is cached by content (before sanitizing, which is cheap and depends
# on where the document is); a failure for a shorter time, as load may have caused it.
RST_CACHE_SECONDS = 24 * 3600
RST_FAILURE_SECONDS = 600


def kind_of(name: str) -> str | None:
    lower = name.lower()
    if rendering.is_markdown(lower):
        return "markdown"
    if lower.endswith(RST_NAMES):
        return "rst"
    if lower.endswith(NOTEBOOK_NAMES):
        return "notebook"
    return None


def is_document(name: str) -> bool:
    return kind_of(name) is not None


def source_with_note(text: str, note: str) -> SafeString:
    """The document as plain text, under a note saying why it is not rendered."""
    return format_html('<p class="muted document-note">{}</p><pre class="plain">{}</pre>', note, text)


def render_document(
    name: str, text: str, *, directory: str, blob_base: str, raw_base: str
) -> SafeString | None:
    """`text` (the file `name` in `directory`) as sanitized HTML, or None if it is not a kind
    of document we render. Links resolve as rendering.render_markdown's do."""
    kind = kind_of(name)
    if kind is None:
        return None
    bases: dict = {"directory": directory, "blob_base": blob_base, "raw_base": raw_base}
    if len(text) > settings.BLOB_MAX_DISPLAY_BYTES:
        return source_with_note(
            text[: settings.BLOB_MAX_DISPLAY_BYTES], "This document is too large to render."
        )
    if kind == "markdown":
        return rendering.render_markdown(text, **bases)
    if kind == "notebook":
        try:
            return notebooks.render_notebook(text, **bases)
        except notebooks.Unreadable as exc:
            return source_with_note(text, f"{exc} Here is its source.")
    html, failure = rst_html(text)
    if failure:
        return source_with_note(text, failure)
    return rendering.sanitize(html, **bases)


@memoize
def _renderer_version() -> str:
    """docutils' version and the worker's own text: either changing renders documents anew."""
    return version("docutils") + "-" + hashlib.sha256(RST_WORKER.read_bytes()).hexdigest()[:12]


def rst_html(text: str) -> tuple[str, str]:
    """(docutils' HTML, "") or ("", why it could not be rendered); cached by content."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    key = f"document:rst:{_renderer_version()}:{digest}"
    hit = cache.get(key)
    if isinstance(hit, tuple) and len(hit) == 2:
        return hit
    result, seconds = _run_docutils(text), RST_CACHE_SECONDS
    if result[1]:
        seconds = RST_FAILURE_SECONDS
    cache.set(key, result, seconds)
    return result


def _run_docutils(text: str) -> tuple[str, str]:
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(RST_WORKER)],
            input=text.encode("utf-8", "replace"),
            capture_output=True,
            timeout=settings.DOCUMENT_RENDER_TIMEOUT,
            env={"LANG": "C.UTF-8"},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "", "This document took too long to render; here is its source."
    except OSError:
        return "", "This document could not be rendered; here is its source."
    if done.returncode != 0:
        return "", "This document could not be read as reStructuredText; here is its source."
    return done.stdout.decode("utf-8", "replace"), ""
