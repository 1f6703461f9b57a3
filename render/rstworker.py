"""reStructuredText to HTML in a child process: `python -I rstworker.py < text > html`.

Run by render.documents, which kills it at DOCUMENT_RENDER_TIMEOUT: docutils takes seconds on
large or pathological input (a 500 KB grid table: 8 s), and a thread cannot be stopped. It
imports only the standard library and docutils, never Django. Its HTML is sanitized by the
parent; here docutils is only kept from reading files, URLs or configuration and from passing
raw HTML through. Exit status 0: the body's HTML on stdout; 2: the document could not be read.
"""

from __future__ import annotations

import resource
import sys

SETTINGS = {
    "_disable_config": True,  # no docutils.conf from the working directory, home or /etc
    "raw_enabled": False,  # `raw` directive and roles
    "file_insertion_enabled": False,  # `include`, `csv-table :file:/:url:`, `raw :file:/:url:`
    "report_level": 5,  # no system messages in the output
    "halt_level": 5,  # never stop on errors: render what can be
    "warning_stream": False,
    "traceback": True,  # raise instead of sys.exit() on internal errors
    "exit_status_level": 5,
    "input_encoding": "unicode",
    "output_encoding": "unicode",
    "doctitle_xform": False,  # the first heading stays in the body, as on other forges
    "initial_header_level": 1,
    "sectsubtitle_xform": False,
    "syntax_highlight": "none",
    "math_output": "HTML",
    "embed_stylesheet": False,
    "smart_quotes": False,
    "pep_references": False,
    "rfc_references": False,
}
MEMORY_LIMIT = 1 << 30


def render(text: str) -> str:
    from docutils.core import publish_parts

    return publish_parts(text, writer_name="html5", settings_overrides=dict(SETTINGS))["body"]


def main() -> int:
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    text = sys.stdin.buffer.read().decode("utf-8", "replace")
    try:
        html = render(text)
    except Exception as exc:  # RecursionError and MemoryError included
        sys.stderr.write(f"{type(exc).__name__}: {str(exc)[:200]}\n")
        return 2
    sys.stdout.buffer.write(html.encode("utf-8", "replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
