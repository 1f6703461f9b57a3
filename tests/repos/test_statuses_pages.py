"""Commit statuses on the commit, proposal and Work pages: a badge with the combined state and
the contexts' details, escaped; only http(s) targets become links; the Work page reads every
head's statuses in one query, fresh on every request."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from repos import statuses
from repos.models import CommitStatus
from repos.templatetags.commit_statuses import status_link
from tests.factories import UserFactory
from tests.showwork.lab import DAY, Lab

pytestmark = pytest.mark.django_db

NOW = int(time.time())
EVIL = "<script>alert('x')</script>"


@pytest.fixture
def lab(tmp_path, git_home) -> Lab:
    """owner/project: main, and alice's workspace head two commits on, with a proposal."""
    from reviews.services import proposal_open

    lab = Lab(tmp_path, git_home)
    lab.main = lab.commit("main one", at=NOW - 5 * DAY)
    lab.publish("refs/heads/main")
    lab.commit("alice one", at=NOW - 2 * DAY)
    lab.head = lab.commit("alice two", at=NOW - DAY)
    lab.publish("refs/users/alice/topic")
    alice = UserFactory(username="alice")
    lab.proposal = proposal_open(
        repo=lab.repo, user=alice, source_ref="refs/users/alice/topic", target_branch="main", title="topic"
    )
    return lab


def report(lab, sha: str, state: str, context: str, **fields):
    return statuses.status_set(
        repo=lab.repo, user=lab.owner, sha=sha, state=state, context=context, **fields
    )[0]


def hostile(lab, sha: str) -> None:
    """Script in a context and a description (the service takes any printable text), and a
    javascript: target stored past the service, as an old row or a direct write could be."""
    report(
        lab, sha, "failure", EVIL, description=f"broke {EVIL}", target_url="https://ci.example/run/1?a=1&b=2"
    )
    CommitStatus.objects.create(
        repository=lab.repo, sha=sha, context="sneaky", state="success", target_url="javascript:alert(1)"
    )


def assert_escaped(page: str) -> None:
    assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "broke &lt;script&gt;" in page
    assert 'href="https://ci.example/run/1?a=1&amp;b=2"' in page
    assert "javascript:" not in page


def test_commit_page_shows_the_badge_and_details_escaped(lab):
    assert "check-badge" not in Client().get(f"/owner/project/commit/{lab.head}").content.decode()
    hostile(lab, lab.head)
    page = Client().get(f"/owner/project/commit/{lab.head}").content.decode()
    assert 'class="check-badge check-failure"' in page and "1 of 2 checks failing" in page
    assert page.count('class="check-link"') == 1  # the javascript: target is shown as no link
    assert ">sneaky</strong>" in page
    assert_escaped(page)


def test_proposal_page_shows_the_shown_revision_s_head(lab):
    report(lab, lab.head, "pending", "ci/build", description="running")
    report(lab, lab.main, "failure", "ci/build")  # the target's tip: not this proposal's
    page = Client().get(f"/owner/project/proposals/{lab.proposal.number}").content.decode()
    assert 'class="check-badge check-pending"' in page and "1 of 1 check pending" in page
    assert "check-failure" not in page
    hostile(lab, lab.head)
    page = Client().get(f"/owner/project/proposals/{lab.proposal.number}").content.decode()
    assert "check-badge check-failure" in page
    assert_escaped(page)


def test_work_page_marks_heads_and_tips_with_one_query_never_cached(lab):
    first = Client().get("/owner/project/work")
    assert "sw-check" not in first.content.decode()
    report(lab, lab.head, "failure", EVIL)
    report(lab, lab.main, "success", "ci")
    with CaptureQueriesContext(connection) as queries:
        response = Client().get("/owner/project/work")
    # The graph came from the cache; the statuses did not.
    assert response["X-Showwork-Cache"] == "hit"
    page = response.content.decode()
    assert '<tspan class="sw-check sw-check-failure">\u2717</tspan>' in page
    assert '<tspan class="sw-check sw-check-success">\u2713</tspan>' in page
    assert "alice two (checks: failure)" in page and "main one (checks: success)" in page
    assert "<script>" not in page and "alert(" not in page  # contexts are not on this page
    assert sum("repos_commitstatus" in q["sql"] for q in queries.captured_queries) == 1


def test_only_absolute_http_urls_are_linked():
    assert status_link("https://ci.example/x") == "https://ci.example/x"
    assert status_link("http://ci.example:8080/x?y=1") == "http://ci.example:8080/x?y=1"
    for url in ("", "javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,x", "/x", "//ci.example/x"):
        assert status_link(url) is None, url
    for url in (
        "https://ci.example/\nx",
        "https://ci.example\\@evil",
        "http:///x",
        "https://ci.example/\u202e",
    ):
        assert status_link(url) is None, url
