"""`-o description=` over a real push: `\\n` is a line break on the page, `\\\\` a backslash."""

from __future__ import annotations

import pytest
from django.test import Client

from reviews.models import Proposal
from tests.support.wait import wait_until

pytestmark = [
    pytest.mark.live,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker_process"),
]


def test_description_line_breaks_and_backslashes(world):
    alice = world.add("alice")
    alice.commit("feature")
    result = alice.push(
        "HEAD:refs/for/main",
        options=["title=Breaks", r"description=First line.\nSecond: C:\\new\\tab.\n\nA paragraph."],
    )
    assert result.returncode == 0, result.stderr
    proposal = wait_until(
        lambda: Proposal.objects.filter(repository=world.repo).first(), timeout=30, what="a proposal"
    )
    assert proposal.description == "First line.\nSecond: C:\\new\\tab.\n\nA paragraph."
    page = Client().get(f"/owner/project/proposals/{proposal.number}").content.decode()
    assert "<p>First line.<br>\nSecond: C:\\new\\tab.</p>\n<p>A paragraph.</p>" in page
