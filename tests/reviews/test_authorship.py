"""Who a merge credits: a squash is authored by the proposal author's identity from their
commits, with Co-authored-by trailers for the others; rebase keeps every author; the merging
user is the committer."""

from __future__ import annotations

import subprocess

import pytest

from reviews import merge, services
from tests.gitutil import git

pytestmark = pytest.mark.django_db

ALICE_WORK = "Alice Anders <alice@work.invalid>"
CARL = "Carl Contributor <carl@example.invalid>"


def two_authors(scene):
    scene.checkout("feature", "main")
    scene.commit("one", {"b.txt": "b\n"}, author=ALICE_WORK)
    scene.commit("two", {"c.txt": "c\n"}, author=CARL)
    scene.commit("three", {"d.txt": "d\n"}, author=ALICE_WORK)
    scene.commit("four", {"e.txt": "e\n"}, author=CARL)
    scene.commit("five", {"f.txt": "f\n"}, author=CARL)
    head = scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    proposal = services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Two authors",
    )
    return proposal, head


def test_squash_credits_the_authors_identity_and_co_authors(scene):
    scene.alice.commit_email = "alice@work.invalid"  # the address her commits carry
    scene.alice.save()
    proposal, _head = two_authors(scene)
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="squash")
    assert scene.show(result.sha, "%an <%ae>") == ALICE_WORK  # not the account's display name
    assert scene.show(result.sha, "%cn <%ce>") == "Max Maintainer <max@example.invalid>"
    body = scene.show(result.sha, "%B")
    assert body.endswith(f"\n\nCo-authored-by: {CARL}")
    assert body.count("Co-authored-by:") == 1
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"], input=body, env=scene.env, capture_output=True, text=True
    )
    assert parsed.stdout == f"Co-authored-by: {CARL}\n"  # git reads it as a trailer


def test_squash_without_a_matching_email_takes_the_most_frequent_author(scene):
    proposal, _head = two_authors(scene)  # alice's account emails match no commit
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="squash")
    assert scene.show(result.sha, "%an <%ae>") == CARL  # three commits of five
    assert scene.show(result.sha, "%B").endswith(f"\n\nCo-authored-by: {ALICE_WORK}")


def test_rebase_keeps_every_author(scene):
    scene.checkout("main")
    scene.commit("main moves", {"m.txt": "m\n"})
    scene.publish("main")
    proposal, head = two_authors(scene)
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="rebase")
    authors = git(
        scene.env, "--git-dir", scene.bare, "log", "--format=%an <%ae>|%cn", "-5", result.sha
    ).stdout
    assert authors.splitlines() == [
        f"{CARL}|Max Maintainer",
        f"{CARL}|Max Maintainer",
        f"{ALICE_WORK}|Max Maintainer",
        f"{CARL}|Max Maintainer",
        f"{ALICE_WORK}|Max Maintainer",
    ]
    assert result.sha != head  # replayed onto the moved target, not fast-forwarded
