"""The search page: counts per type, escaped snippets with <mark>, code links to lines, and
clear 400s for bad input."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_page_finds_code_with_counts_and_escaped_snippets(make_work):
    work = make_work()
    sha = work.write({"x.html": "<script>alert('needle')</script>\n"}, message="needle <b>bold</b>")
    work.index()
    response = Client().get("/search", {"q": "needle"})
    assert response.status_code == 200
    html = response.content.decode()
    assert f'href="/owner/project/blob/{sha}/x.html#L1"' in html
    assert "&lt;script&gt;alert(&#x27;<mark>needle</mark>&#x27;)&lt;/script&gt;" in html
    assert "<script>alert" not in html
    counts = response.context["counts"]
    assert counts["code"] == 1 and counts["commits"] == 1 and counts["repositories"] == 0
    commits = Client().get("/search", {"q": "needle", "type": "commits"}).content.decode()
    assert "<mark>needle</mark> &lt;b&gt;bold&lt;/b&gt;" in commits


def test_header_box_on_every_page():
    html = Client().get("/").content.decode()
    assert 'action="/search"' in html and 'name="q"' in html


def test_empty_and_bad_input(make_work):
    client = Client()
    assert client.get("/search").status_code == 200
    for params in ({"q": "a\0b"}, {"q": "x", "type": "nope"}, {"q": "x", "page": "-1"}, {"q": "x" * 300}):
        response = client.get("/search", params)
        assert response.status_code == 400, params
    # Too short for code: the other types still answer, code says why it cannot.
    response = client.get("/search", {"q": "ab", "type": "code"})
    assert response.status_code == 400 and b"at least 3" in response.content
    response = client.get("/search", {"q": "ab", "type": "users"})
    assert response.status_code == 200


def test_users_tab(make_work):
    UserFactory(username="marigold", display_name="Mari Gold")
    response = Client().get("/search", {"q": "marigold", "type": "users"})
    assert b'href="/marigold"' in response.content
    assert response.context["counts"]["users"] == 1


def test_pages_beyond_the_last_are_empty(make_work):
    work = make_work()
    work.write({"a.txt": "needle\n"})
    work.index()
    response = Client().get("/search", {"q": "needle", "page": "5"})
    assert response.status_code == 200 and b"Nothing found" in response.content
