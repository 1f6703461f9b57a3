"""Interdiff between two revisions of a proposal: across a rebase, with conflicts, as range-diff
text, with bad revision numbers, and for those who may not see the proposal."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from gitcore import gitdiff
from repos import services as repo_services
from repos.models import Visibility
from reviews import interdiff, services
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
URL = "/owner/project/proposals/1/interdiff"
REF = "refs/users/alice/feature"
B = "".join(f"b{i}\n" for i in range(1, 21))
B_FIXED = B.replace("b2\n", "b2 fixed\n")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def two_commit_proposal(scene):
    """alice's proposal of two commits (b.txt added, a.txt's "two" changed) as revision 1."""
    scene.checkout("feature", "main")
    scene.commit("add b", {"b.txt": B})
    scene.commit("shout two", {"a.txt": "one\nTWO\nthree\n"})
    scene.publish("feature", REF)
    scene.checkout("main")
    return services.proposal_open(
        repo=scene.repo, user=scene.alice, source_ref=REF, target_branch="main", title="Two commits"
    )


def move_main(scene, files: dict[str, str]) -> None:
    scene.checkout("main")
    scene.commit("upstream work", files)
    scene.publish("main")


def rebase_feature(scene, amend: dict[str, str] | None = None, *, resolve: dict[str, str] | None = None):
    """The feature rebased onto main (conflicts resolved with `resolve`), its first commit
    amended with `amend`; recorded as the next revision."""
    scene.checkout("feature")
    result = scene.git("rebase", "--quiet", "main", check=False)
    if result.returncode != 0:
        scene.write(resolve or {})
        scene.git("-c", "core.editor=true", "rebase", "--continue")
    if amend:
        first = scene.git("rev-parse", "HEAD~1").stdout.strip()
        scene.git("checkout", "--quiet", first)
        scene.write(amend)
        scene.git("commit", "--quiet", "--amend", "--no-edit")
        amended = scene.git("rev-parse", "HEAD").stdout.strip()
        scene.git("checkout", "--quiet", "feature")
        scene.git("rebase", "--quiet", "--onto", amended, first, "feature")
    head = scene.publish("feature", REF)
    scene.checkout("main")
    proposal = scene.repo.proposals.get(number=1)
    return services.revision_record(proposal=proposal, head=head)


def changed_lines(page) -> dict[str, list[tuple[str, str]]]:
    """The diff the page shows, as {path: [(kind, text), ...]} of added and removed lines."""
    return {
        f.path: [(line.kind, line.text) for h in f.hunks for line in h.lines if line.kind in ("add", "del")]
        for f in page.context["diff"].files
    }


def test_interdiff_across_a_rebase_shows_only_the_amended_line(scene):
    two_commit_proposal(scene)
    move_main(scene, {"keep.txt": "keep\nmore\n", "c.txt": "upstream file\n"})
    second = rebase_feature(scene, {"b.txt": B_FIXED})
    first = scene.repo.proposals.get(number=1).revisions.get(number=1)
    assert second is not None and second.base_sha != first.base_sha  # really rebased
    page = signed_in(scene.bob).get(f"{URL}/1..2")
    assert page.status_code == 200
    assert changed_lines(page) == {"b.txt": [("del", "b2"), ("add", "b2 fixed")]}
    assert page.context["sides"].rebased and not page.context["sides"].conflicts
    assert b'id="interdiff-rebased"' in page.content
    # The two heads as they are would show the rebase too: the replay is what removes it.
    plain = interdiff.Sides(first.head_sha, second.head_sha, rebased=False)
    assert {"keep.txt", "c.txt", "b.txt"} <= {
        f.path for f in gitdiff.diff(scene.repo.disk_path, plain.left, plain.right).files
    }
    # Highlighted and word-marked like every diff page.
    assert b"b2<ins> fixed</ins>" in page.content


def test_interdiff_without_a_rebase_diffs_the_heads(scene):
    two_commit_proposal(scene)
    scene.checkout("feature")
    scene.commit("third", {"d.txt": "d\n"})
    head = scene.publish("feature", REF)
    scene.checkout("main")
    services.revision_record(proposal=scene.repo.proposals.get(number=1), head=head)
    page = Client().get(f"{URL}/1..2")
    assert page.status_code == 200
    assert changed_lines(page) == {"d.txt": [("add", "d")]}
    assert not page.context["sides"].rebased


def test_conflicting_rebase_falls_back_to_the_heads_and_names_the_files(scene):
    two_commit_proposal(scene)
    move_main(scene, {"a.txt": "one\ndeux\nthree\n", "keep.txt": "keep\nmore\n"})
    rebase_feature(scene, resolve={"a.txt": "one\nTWO\nthree\n"})
    page = signed_in(scene.bob).get(f"{URL}/1..2")
    assert page.status_code == 200
    assert page.context["sides"].conflicts == ["a.txt"]
    assert re.search(rb'id="interdiff-conflicts".*<code>a\.txt</code>', page.content, re.S)
    # The fallback: head against head, the target's change to keep.txt included.
    assert "keep.txt" in changed_lines(page)


def test_range_diff_text(scene):
    two_commit_proposal(scene)
    move_main(scene, {"keep.txt": "keep\nmore\n"})
    rebase_feature(scene, {"b.txt": B_FIXED})
    response = Client().get(f"{URL}/1..2.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    text = response.content.decode()
    assert re.search(r"^1: +[0-9a-f]+ ! 1: +[0-9a-f]+ add b$", text, re.M), text
    assert re.search(r"^2: +[0-9a-f]+ = 2: +[0-9a-f]+ shout two$", text, re.M), text
    assert "b2 fixed" in text and "\x1b[" not in text  # no colour codes


def test_range_diff_is_size_capped(scene, monkeypatch):
    two_commit_proposal(scene)
    move_main(scene, {"keep.txt": "keep\nmore\n"})
    rebase_feature(scene, {"b.txt": B_FIXED})
    monkeypatch.setattr(interdiff, "RANGE_DIFF_MAX_BYTES", 100)
    text = Client().get(f"{URL}/1..2.txt").content.decode()
    assert text.endswith("[cut: the output is larger than 0 KiB]\n")
    assert len(text.partition("\n[cut")[0]) <= 100


def test_bad_revision_numbers_are_404(scene):
    two_commit_proposal(scene)
    move_main(scene, {"keep.txt": "keep\nmore\n"})
    rebase_feature(scene, {"b.txt": B_FIXED})
    bob = signed_in(scene.bob)
    for spec in ("2..1", "1..1", "1..3", "0..2", "3..4", "99999999999..99999999999999"):
        assert bob.get(f"{URL}/{spec}").status_code == 404, spec
        assert bob.get(f"{URL}/{spec}.txt").status_code == 404, spec
    for spec in ("a..2", "1...2", "1..2x", "-1..2"):
        assert bob.get(f"{URL}/{spec}").status_code == 404, spec
    assert bob.get("/owner/project/proposals/2/interdiff/1..2").status_code == 404
    # The picker's form: any order, the same revision twice, and garbage.
    assert bob.get(f"{URL}?from=2&to=1")["Location"] == f"{URL}/1..2"
    assert bob.get(f"{URL}?from=1&to=2")["Location"] == f"{URL}/1..2"
    assert bob.get(f"{URL}?from=2&to=2")["Location"] == "/owner/project/proposals/1/revisions/2"
    for query in ("", "from=x&to=2", "from=0&to=2", "from=1", "from=%00&to=1"):
        assert bob.get(f"{URL}?{query}").status_code == 404, query


def test_private_repository_and_hidden_work_are_404(scene):
    from workspaces import moderation

    two_commit_proposal(scene)
    move_main(scene, {"keep.txt": "keep\nmore\n"})
    rebase_feature(scene, {"b.txt": B_FIXED})
    paths = (f"{URL}/1..2", f"{URL}/1..2.txt", f"{URL}?from=1&to=2")
    staff = UserFactory(username="staffer", is_staff=True)
    moderation.do_hide_workspace(repo=scene.repo, user=scene.alice, acting_user=staff, reason="abuse")
    for path in paths:
        assert signed_in(scene.bob).get(path).status_code == 404, path
        assert Client().get(path).status_code == 404, path
    assert signed_in(staff).get(f"{URL}/1..2").status_code == 200
    moderation.do_unhide_workspace(repo=scene.repo, user=scene.alice, acting_user=staff, reason="ok")
    repo_services.repository_update(repo=scene.repo, visibility=Visibility.PRIVATE)
    outsider = signed_in(UserFactory(username="mallory"))
    for path in paths:
        assert outsider.get(path).status_code == 404, path
    assert signed_in(scene.bob).get(f"{URL}/1..2").status_code == 200  # a member reads it


def test_picker_offers_changes_since_the_last_revision_the_user_looked_at(scene):
    two_commit_proposal(scene)
    proposal = scene.repo.proposals.get(number=1)
    services.comment_add(proposal=proposal, user=scene.maint, body="looked at 1")
    for n in (2, 3):
        scene.checkout("feature")
        scene.commit(f"more {n}", {f"f{n}.txt": f"{n}\n"})
        head = scene.publish("feature", REF)
        scene.checkout("main")
        services.revision_record(proposal=proposal, head=head)
    page = signed_in(scene.maint).get("/owner/project/proposals/1")
    assert re.search(rb'id="changes-since" href="/owner/project/proposals/1/interdiff/1\.\.3"', page.content)
    # Nobody's history: the revision before the latest.
    page = signed_in(scene.bob).get("/owner/project/proposals/1")
    assert re.search(rb'id="changes-since" href="/owner/project/proposals/1/interdiff/2\.\.3"', page.content)
    # Approving the latest is not "looked at an earlier one": the comment on 1 still counts.
    services.proposal_approve(proposal=proposal, user=scene.maint)
    page = signed_in(scene.maint).get("/owner/project/proposals/1")
    assert b'href="/owner/project/proposals/1/interdiff/1..3"' in page.content


def test_a_revision_whose_objects_are_gone_is_404(scene):
    proposal = two_commit_proposal(scene)
    first = proposal.revisions.get(number=1)
    gone = "d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9c0d"
    proposal.revisions.create(number=2, head_sha=gone, base_sha=first.base_sha)
    bob = signed_in(scene.bob)
    assert bob.get(f"{URL}/1..2").status_code == 404
    assert bob.get(f"{URL}/1..2.txt").status_code == 404
