"""Rendered documents (render.documents): reStructuredText through docutils in a child process,
Jupyter notebooks parsed by hand, both sanitized like Markdown; and on the real pages."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from render import documents, imageproxy
from tests.repos.histories import Work
from tests.repos.imagehost import png

pytestmark = pytest.mark.django_db

BASES = {"directory": "docs", "blob_base": "/o/r/blob/main", "raw_base": "/o/r/raw/main"}
RST = """\
Project
=======

Usage
-----

Read `the guide <guide.rst>`_ or `the site <https://example.com/>`_.

.. image:: https://img.example.com/badge.svg

.. image:: logo.png

.. raw:: html

   <script>window.raw=1</script><b>rawbold</b>

.. include:: /etc/passwd

.. csv-table::
   :file: /etc/passwd

<script>window.text=1</script> and <b>bold</b>

.. code:: python

   print("<hi>")
"""


def rst(text: str) -> str:
    # A fresh text each time, so the content cache never answers for an earlier test.
    return str(documents.render_document("README.rst", text + f"\n.. {uuid.uuid4()}\n", **BASES))


def test_rst_headings_links_and_images():
    html = rst(RST)
    assert "<h1>Project</h1>" in html and "<h2>Usage</h2>" in html
    assert 'href="/o/r/blob/main/docs/guide.rst"' in html
    assert 'href="https://example.com/"' in html and 'rel="nofollow noopener"' in html
    assert 'src="/o/r/raw/main/docs/logo.png"' in html
    proxied = imageproxy.proxy_url("https://img.example.com/badge.svg")
    assert f'src="{proxied}"' in html
    assert 'print("&lt;hi&gt;")' in html or "print(&quot;&lt;hi&gt;&quot;)" in html


def test_rst_raw_include_and_file_options_are_refused_and_markup_is_escaped():
    html = rst(RST)
    assert "<script" not in html
    assert "window.raw" not in html and "rawbold" not in html
    unsanitized, failure = documents.rst_html(RST)
    assert not failure and "rawbold" not in unsanitized and "<script" not in unsanitized
    assert "root:" not in html  # nothing of /etc/passwd
    assert "&lt;script&gt;window.text=1&lt;/script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html


def test_rst_javascript_links_and_custom_raw_roles_are_dropped():
    html = rst(
        "`x <javascript:alert(1)>`_\n\n.. role:: html(raw)\n   :format: html\n\n:html:`<script>alert(1)</script>`\n"
    )
    assert "javascript:" not in html and "<script" not in html


def test_a_malformed_rst_document_renders_what_it_can():
    html = rst("Title\n===\n\n`unclosed *emphasis\n\n.. unknown-directive:: x\n\n* item\n\n   bad indent\n")
    assert "<li>" in html and "item" in html
    assert "unclosed" in html
    assert "document-note" not in html


def test_rst_that_takes_too_long_is_shown_as_source_with_a_note(settings):
    settings.DOCUMENT_RENDER_TIMEOUT = 1
    row = "|" + "  |" * 300 + "\n+" + "--+" * 300 + "\n"
    table = "+" + "--+" * 300 + "\n" + row * 300
    html = rst(table)
    assert "took too long" in html and 'class="plain"' in html


def test_rst_that_docutils_cannot_read_is_shown_as_source_with_a_note():
    deep = "".join(" " * i + "x\n\n" for i in range(300))  # nesting past Python's recursion limit
    html = rst(deep)
    assert "could not be read as reStructuredText" in html and 'class="plain"' in html


def test_rendered_rst_is_cached_by_content(monkeypatch):
    text = f"Cached\n======\n\n.. {uuid.uuid4()}\n"
    first = documents.render_document("a.rst", text, **BASES)

    def no_second_run(_text):
        raise AssertionError("docutils ran again for the same text")

    monkeypatch.setattr(documents, "_run_docutils", no_second_run)
    assert documents.render_document("b.rst", text, **BASES) == first


def test_other_names_are_not_documents():
    assert documents.render_document("main.py", "print(1)", **BASES) is None
    assert documents.is_document("notes.REST") and documents.is_document("a.ipynb")


def notebook(cells, nbformat=4, language="python") -> str:
    return json.dumps(
        {
            "nbformat": nbformat,
            "nbformat_minor": 5,
            "metadata": {"language_info": {"name": language}},
            "cells": cells,
        }
    )


def nb(text: str) -> str:
    return str(documents.render_document("analysis.ipynb", text, **BASES))


PNG64 = __import__("base64").b64encode(png()).decode()
CELLS = [
    {"cell_type": "markdown", "source": ["# Analysis\n", "See [data](data.csv)."], "metadata": {}},
    {
        "cell_type": "code",
        "execution_count": 3,
        "source": "x = '<b>'\nprint(x)",
        "metadata": {},
        "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["<b>\n"]},
            {
                "output_type": "execute_result",
                "execution_count": 3,
                "metadata": {},
                "data": {"image/png": PNG64, "text/plain": "<Figure>"},
            },
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {
                    "text/html": [
                        "<table><tr><td>1</td></tr></table><script>alert(1)</script><img src=x onerror=alert(1)>"
                    ]
                },
            },
            {
                "output_type": "error",
                "ename": "ValueError",
                "evalue": "bad",
                "traceback": ["\x1b[0;31mValueError\x1b[0m: bad <here>"],
            },
        ],
    },
    {"cell_type": "raw", "source": "<raw & text>", "metadata": {}},
]


def test_notebook_cells_and_outputs():
    html = nb(notebook(CELLS))
    assert "<h1>Analysis</h1>" in html and 'href="/o/r/blob/main/docs/data.csv"' in html
    assert 'class="highlight"' in html and "In&nbsp;[3]:" in html
    assert '<span class="n">x</span>' in html  # highlighted as Python
    assert "&lt;b&gt;\n</pre>" in html  # stream text escaped
    assert f'src="data:image/png;base64,{PNG64}"' in html
    assert "<table><tbody><tr><td>1</td></tr></tbody></table>" in html or "<td>1</td>" in html
    assert "<script" not in html and "onerror" not in html
    assert "ValueError: bad &lt;here&gt;" in html and "\x1b" not in html
    assert "&lt;raw &amp; text&gt;" in html
    assert "css/documents.css" in html


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("{not json", "not valid JSON"),
        ('{"nbformat": 3, "worksheets": []}', "Only nbformat 4"),
        ('{"nbformat": "4", "cells": []}', "Only nbformat 4"),
        ("[1, 2]", "not an object"),
        ('{"nbformat": 4, "cells": {"a": 1}}', "not a list"),
        (notebook([{"cell_type": "code", "source": 5, "outputs": []}]), "not text"),
        (
            notebook(
                [{"cell_type": "code", "source": "", "outputs": [{"output_type": "stream", "text": [1]}]}]
            ),
            "not text",
        ),
        (
            notebook([{"cell_type": "code", "source": "", "outputs": [{"output_type": "exec"}]}]),
            "unknown type",
        ),
        (notebook([{"cell_type": "code", "source": "", "outputs": "nope"}]), "not a list"),
        (
            notebook(
                [
                    {
                        "cell_type": "code",
                        "source": "",
                        "outputs": [{"output_type": "display_data", "data": []}],
                    }
                ]
            ),
            "not an object",
        ),
        (notebook([{"cell_type": "widget"}]), "unknown type"),
        (notebook([{"cell_type": "raw", "source": ""}] * 2001), "more than 2000 cells"),
        (
            notebook(
                [
                    {
                        "cell_type": "code",
                        "source": "",
                        "outputs": [{"output_type": "stream", "text": ""}] * 2001,
                    }
                ]
            ),
            "more than 2000 outputs",
        ),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ],
)
def test_a_hostile_notebook_is_shown_as_source_with_a_note(text, note):
    html = nb(text)
    assert note in html, html[:300]
    assert 'class="plain"' in html


def test_huge_outputs_are_cut_and_bad_images_left_out():
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "source": "",
            "outputs": [
                {"output_type": "stream", "name": "stderr", "text": "y" * 50_000},
                {
                    "output_type": "display_data",
                    "data": {"image/png": "<svg onload=alert(1)>", "text/plain": "fallback"},
                },
                {"output_type": "display_data", "data": {"image/jpeg": PNG64}},  # a PNG claiming JPEG
            ],
        }
    ]
    html = nb(notebook(cells, language="no-such-language"))
    assert "y" * 20_000 in html and "y" * 20_001 not in html and "30000 more characters" in html
    assert "fallback" in html and "onload" not in html
    assert "data:image/jpeg" not in html
    assert "In&nbsp;[ ]:" in html


@pytest.fixture
def repo(tmp_path, git_home):
    work = Work(tmp_path / "work", git_home)
    work.commit(
        "docs",
        {
            "README.rst": "Hello\n=====\n\n`guide <docs/guide.rst>`_\n\n.. raw:: html\n\n   <script>x</script>\n",
            "docs/guide.rst": "Guide\n=====\n\n.. image:: https://img.example.com/b.png\n",
            "analysis.ipynb": notebook(CELLS),
            "broken.ipynb": "{",
        },
    )
    return work.publish()


def test_readme_rst_is_rendered_on_the_repository_and_tree_pages(repo):
    for path in ("/olga/proj", "/olga/proj/tree/main"):
        page = Client().get(path).content.decode()
        assert "<h1>Hello</h1>" in page
        assert 'href="/olga/proj/blob/main/docs/guide.rst"' in page
        assert "<script>x" not in page


def test_blob_page_renders_rst_and_notebooks_with_a_source_toggle(repo):
    page = Client().get("/olga/proj/blob/main/docs/guide.rst").content.decode()
    assert "<h1>Guide</h1>" in page and 'src="/_img/' in page and '<a href="?plain=1">Source</a>' in page
    page = Client().get("/olga/proj/blob/main/analysis.ipynb").content.decode()
    assert 'class="notebook"' in page and "data:image/png;base64," in page
    source = Client().get("/olga/proj/blob/main/analysis.ipynb?plain=1").content.decode()
    assert 'class="notebook"' not in source and '<a href="?">Rendered</a>' in source
    broken = Client().get("/olga/proj/blob/main/broken.ipynb")
    assert broken.status_code == 200 and "not valid JSON" in broken.content.decode()
