"""The dashboard as a work queue: each section, who sees what (private repositories, hidden and
taken-down workspaces), and the stale-ref cleanup it posts (archived, restorable, refused for
others' refs and without CSRF)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import timezone

from gitcore.git import run_git
from gitcore.gittools import ref_exists, rev_parse
from repos import services as repo_services
from repos.models import CommitStatus, Role, Visibility
from reviews import queues, services
from reviews.models import MergeCheck, Proposal, ReviewRequest, Thread
from tests.factories import RepositoryFactory
from tests.gitutil import git
from tests.reviews.conftest import Scene
from workspaces import following
from workspaces import services as ws_services
from workspaces.models import ArchivedRef, Workspace

pytestmark = pytest.mark.django_db
XSS = "<script>window.pwned=1</script>"


@pytest.fixture
def scene(tmp_path, git_home) -> Scene:
    scene = Scene(tmp_path, git_home)
    for user in (scene.alice, scene.bob):
        Workspace.objects.create(repository=scene.repo, user=user, last_push_at=timezone.now())
    return scene


def work(scene: Scene, name: str, files: dict, *, user: str = "alice", message: str | None = None) -> str:
    scene.checkout(name, "main")
    scene.commit(message or f"{name} work", files)
    head = scene.publish(name, f"refs/users/{user}/{name}")
    scene.checkout("main")
    return head


def propose(scene: Scene, name: str, *, user=None, title: str | None = None) -> Proposal:
    user = user or scene.alice
    return services.proposal_open(
        repo=scene.repo,
        user=user,
        source_ref=f"refs/users/{user.username}/{name}",
        target_branch="main",
        title=title or f"Proposal {name}",
    )


def page_of(user) -> str:
    client = Client()
    client.force_login(user)
    response = client.get("/dashboard")
    assert response.status_code == 200
    return response.content.decode()


def section(page: str, anchor: str) -> str:
    """The HTML of one dashboard section."""
    match = re.search(rf'<section class="dashboard-section" id="{anchor}">(.*?)</section>', page, re.S)
    assert match, anchor
    return match.group(1)


def test_header_links_the_dashboard_for_signed_in_users_only(scene):
    signed = Client()
    signed.force_login(scene.alice)
    header = signed.get("/owner/project").content.decode().split("</header>")[0]
    assert 'href="/dashboard"' in header
    assert 'href="/dashboard"' not in Client().get("/owner/project").content.decode()
    assert Client().get("/dashboard").status_code == 302  # to sign in


def test_review_requests_newest_first_open_proposals_only(scene):
    work(scene, "one", {"1.txt": "1\n"})
    first = propose(scene, "one", title=f"First {XSS}")
    work(scene, "two", {"2.txt": "2\n"})
    second = propose(scene, "two", title="Second")
    work(scene, "three", {"3.txt": "3\n"})
    closed = propose(scene, "three", title="Closed one")
    services.proposal_close(proposal=closed, user=scene.alice)
    for proposal in (first, second, closed):
        ReviewRequest.objects.create(proposal=proposal, user=scene.maint, requested_by=scene.alice)
    page = section(page_of(scene.maint), "review-requests")
    assert page.index("Second") < page.index("First")  # newest request first
    assert "Closed one" not in page
    assert XSS not in page and "First &lt;script&gt;" in page
    assert 'href="/owner/project/proposals/1"' in page and "by alice" in page
    assert "No review requests" in section(page_of(scene.bob), "review-requests")


def test_own_open_proposals_show_where_each_stands(scene):
    work(scene, "feature", {"b.txt": "b\n"})
    proposal = propose(scene, "feature")
    head = proposal.revisions.get().head_sha
    main = scene.tip("refs/heads/main")
    MergeCheck.objects.create(proposal=proposal, target_sha=main, head_sha=head, state="clean", behind=0)
    services.proposal_approve(proposal=proposal, user=scene.maint)
    revision = proposal.revisions.get()
    Thread.objects.create(proposal=proposal, revision=revision, path="b.txt", line_start=1, line_end=1)
    Thread.objects.create(
        proposal=proposal,
        revision=revision,
        path="b.txt",
        line_start=1,
        line_end=1,
        resolved_at=timezone.now(),
    )
    CommitStatus.objects.create(repository=scene.repo, sha=head, context="ci", state="success")
    CommitStatus.objects.create(repository=scene.repo, sha=head, context="lint", state="failure")
    rows = queues.own_open(scene.alice, queues.Readable(scene.alice)).items
    assert [(s.proposal.pk, s.approvals, s.merge, s.unresolved, s.checks) for s in rows] == [
        (proposal.pk, 1, "clean", 1, "failure")
    ]
    page = section(page_of(scene.alice), "your-proposals")
    assert "Proposal feature" in page and "merges cleanly" in page and "failure" in page

    # The target moved: the cached check is for other tips, so it is not known yet.
    scene.commit("main moves", {"c.txt": "c\n"})
    scene.publish("main")
    assert queues.own_open(scene.alice, queues.Readable(scene.alice)).items[0].merge == "unknown"
    MergeCheck.objects.filter(proposal=proposal).update(target_sha=scene.tip("refs/heads/main"), behind=1)
    assert queues.own_open(scene.alice, queues.Readable(scene.alice)).items[0].merge == "behind"
    MergeCheck.objects.filter(proposal=proposal).update(state="conflicts")
    assert queues.own_open(scene.alice, queues.Readable(scene.alice)).items[0].merge == "conflicts"
    # A new revision: the approval is stale, so it no longer counts.
    scene.checkout("feature")
    scene.commit("more", {"b.txt": "bb\n"})
    newer = scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    services.revision_record(proposal=proposal, head=newer)
    assert queues.own_open(scene.alice, queues.Readable(scene.alice)).items[0].approvals == 0


def test_awaiting_lists_others_proposals_without_a_current_approval(scene):
    work(scene, "feature", {"b.txt": "b\n"})
    proposal = propose(scene, "feature")
    for maintainer in (scene.maint, scene.owner):  # a maintainer and the owner (admin)
        assert "Proposal feature" in section(page_of(maintainer), "awaiting")
    assert "Proposal feature" not in section(page_of(scene.bob), "awaiting")  # a reader
    assert "Proposal feature" not in section(page_of(scene.alice), "awaiting")  # its author
    services.proposal_approve(proposal=proposal, user=scene.maint)
    assert "Proposal feature" not in section(page_of(scene.maint), "awaiting")
    assert "Proposal feature" in section(page_of(scene.owner), "awaiting")
    scene.checkout("feature")
    scene.commit("more", {"b.txt": "bb\n"})
    services.revision_record(proposal=proposal, head=scene.publish("feature", "refs/users/alice/feature"))
    scene.checkout("main")
    assert "Proposal feature" in section(page_of(scene.maint), "awaiting")  # approved an older head


def test_sections_are_capped_and_say_how_many_more(scene, monkeypatch):
    monkeypatch.setattr(queues, "SECTION_CAP", 2)
    for i in range(4):
        work(scene, f"f{i}", {f"{i}.txt": f"{i}\n"})
        propose(scene, f"f{i}")
    assert "and 2 more" in section(page_of(scene.maint), "awaiting")
    assert "and 2 more" in section(page_of(scene.alice), "your-proposals")


def test_unproposed_and_stale_refs(scene):
    work(scene, "feature", {"b.txt": "b\n"}, message=f"Feature {XSS}")
    work(scene, "proposed", {"p.txt": "p\n"})
    propose(scene, "proposed")
    scene.publish("main", "refs/users/alice/main")  # a copy of main
    old = scene.tip("refs/heads/main")
    scene.commit("main moves", {"c.txt": "c\n"})
    scene.publish("main")
    run_git(["update-ref", "refs/users/alice/old", old], repo=scene.bare)  # behind main
    page = page_of(scene.alice)
    unproposed, stale = section(page, "unproposed"), section(page, "stale")
    assert "feature" in unproposed and "Feature &lt;script&gt;" in unproposed and XSS not in unproposed
    assert (
        'href="/owner/project/proposals/new?ref=refs%2Fusers%2Falice%2Ffeature&amp;target=main"' in unproposed
    )
    assert "proposed" not in unproposed and "proposed" not in stale  # with the open proposals
    assert ">main<" in stale and ">old<" in stale and "feature" not in stale
    assert stale.count('name="ref"') == 2 and 'id="cleanup-all"' in stale
    assert "No stale refs" in section(page_of(scene.bob), "stale")


def test_private_repositories_and_hidden_work_stay_out(scene, tmp_path):
    secret = RepositoryFactory(owner=scene.owner, name="secret", visibility=Visibility.PRIVATE)
    repo_services.membership_set(repo=secret, user=scene.alice, role=Role.READER)
    repo_services.membership_set(repo=secret, user=scene.maint, role=Role.MAINTAINER)
    Workspace.objects.create(repository=secret, user=scene.alice)
    scene.checkout("hush", "main")
    scene.commit("Secret plan", {"s.txt": "s\n"})
    scene.checkout("main")
    # Fetched into the bare repository, as Scene.publish does (a fetch runs no receive hooks).
    for spec in ("main:refs/heads/main", "hush:refs/users/alice/hush", "main:refs/users/alice/copy"):
        git(
            scene.env,
            "--git-dir",
            str(secret.disk_path),
            "fetch",
            "--quiet",
            str(scene.work),
            f"+refs/heads/{spec}",
        )
    proposal = services.proposal_open(
        repo=secret, user=scene.alice, source_ref="refs/users/alice/hush", target_branch="main", title="Hush"
    )
    ReviewRequest.objects.create(proposal=proposal, user=scene.bob)
    # Members see it; bob, asked for a review but no member, sees none of it.
    assert "Hush" in section(page_of(scene.maint), "awaiting")
    assert "Hush" not in page_of(scene.bob) and "secret" not in page_of(scene.bob)
    # Alice leaves: her own proposal and refs there are gone from her dashboard too.
    repo_services.membership_remove(repo=secret, user=scene.alice)
    page = page_of(scene.alice)
    assert "Hush" not in page and "owner/secret" not in page
    # A hidden workspace: its proposals leave a maintainer's queue (admins still see them).
    Workspace.objects.filter(repository=secret, user=scene.alice).update(hidden=True)
    assert "Hush" not in page_of(scene.maint)
    assert "Hush" in section(page_of(scene.owner), "awaiting")


def test_a_taken_down_workspace_is_out_of_its_owners_sight(scene):
    work(scene, "feature", {"b.txt": "b\n"})
    scene.publish("main", "refs/users/alice/main")
    Workspace.objects.filter(repository=scene.repo, user=scene.alice).update(taken_down=True)
    page = page_of(scene.alice)
    assert "feature" not in section(page, "unproposed") and ">main<" not in section(page, "stale")


def post(user, data, *, csrf=False):
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client.post("/dashboard/stale-refs/cleanup", data, follow=not csrf)


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_cleanup_archives_the_ref_and_it_is_restorable(scene):
    main = scene.publish("main", "refs/users/alice/main")
    response = post(scene.alice, {"repository": scene.repo.pk, "ref": "refs/users/alice/main"})
    assert response.redirect_chain[-1][0] == "/dashboard"
    assert any(m.startswith("Cleaned up 1 stale ref;") for m in messages_of(response))
    assert not ref_exists(scene.bare, "refs/users/alice/main")
    archived = ArchivedRef.objects.get()
    assert (archived.ref, archived.sha, archived.how, archived.deleted_by) == (
        "refs/users/alice/main",
        main,
        "stale",
        scene.alice,
    )
    assert archived.reason == "already on main, cleaned up by alice"
    assert rev_parse(scene.bare, archived.archive_ref) == main  # kept reachable, hidden
    # Their own click: no notification telling them what they just did.
    assert following.archived_ref_notify(repository_id=scene.repo.pk, ref=archived.ref, sha=main) is False
    ws_services.archived_ref_restore(archived=archived, user=scene.alice)
    assert rev_parse(scene.bare, "refs/users/alice/main") == main


def test_cleanup_all_and_next_back_to_the_workspace_page(scene):
    scene.publish("main", "refs/users/alice/main")
    scene.publish("main", "refs/users/alice/copy")
    work(scene, "feature", {"b.txt": "b\n"})
    response = post(scene.alice, {"all": "1"})
    assert any(m.startswith("Cleaned up 2 stale refs;") for m in messages_of(response))
    assert ref_exists(scene.bare, "refs/users/alice/feature")
    assert ArchivedRef.objects.filter(how="stale").count() == 2
    scene.publish("main", "refs/users/alice/again")
    back = "/owner/project/workspaces/alice"
    response = post(scene.alice, {"repository": scene.repo.pk, "ref": "refs/users/alice/again", "next": back})
    assert response.redirect_chain[-1][0] == back
    evil = post(scene.alice, {"all": "1", "next": "https://evil.example/"})
    assert evil.redirect_chain[-1][0] == "/dashboard"


def test_cleanup_refuses_what_it_must(scene):
    main = scene.tip("refs/heads/main")
    scene.publish("main", "refs/users/bob/main")
    scene.publish("main", "refs/users/alice/main")
    work(scene, "feature", {"b.txt": "b\n"})
    # No CSRF token: refused, nothing changed.
    assert (
        post(
            scene.alice, {"repository": scene.repo.pk, "ref": "refs/users/alice/main"}, csrf=True
        ).status_code
        == 403
    )
    # Someone else's ref.
    response = post(scene.alice, {"repository": scene.repo.pk, "ref": "refs/users/bob/main"})
    assert "You can clean up stale refs of your own workspace only." in messages_of(response)
    assert rev_parse(scene.bare, "refs/users/bob/main") == main
    # Work that is not on main is not stale: kept.
    response = post(scene.alice, {"repository": scene.repo.pk, "ref": "refs/users/alice/feature"})
    assert "1 kept: moved since, or not on the default branch." in messages_of(response)
    assert ref_exists(scene.bare, "refs/users/alice/feature")
    # A frozen workspace accepts no writes from its owner.
    Workspace.objects.filter(repository=scene.repo, user=scene.alice).update(frozen=True)
    assert "frozen" in section(page_of(scene.alice), "stale")
    response = post(scene.alice, {"repository": scene.repo.pk, "ref": "refs/users/alice/main"})
    assert any("frozen" in m for m in messages_of(response))
    Workspace.objects.filter(repository=scene.repo, user=scene.alice).update(frozen=False)
    # A private repository the user cannot read, and garbage: 404.
    secret = RepositoryFactory(owner=scene.owner, name="secret", visibility=Visibility.PRIVATE)
    assert post(scene.alice, {"repository": secret.pk, "ref": "refs/users/alice/main"}).status_code == 404
    assert post(scene.alice, {"repository": "x", "ref": "refs/users/alice/main"}).status_code == 404
    assert Client().post("/dashboard/stale-refs/cleanup", {"all": "1"}).status_code == 302  # sign in
    assert ref_exists(scene.bare, "refs/users/alice/main") and not ArchivedRef.objects.exists()


def test_a_stale_ref_with_an_open_proposal_is_kept(scene):
    # Proposed for another branch, its tip on main: the proposal follows it, so it stays.
    scene.checkout("dev", "main")
    scene.commit("dev only", {"d.txt": "d\n"})
    scene.publish("dev")
    scene.checkout("main")
    scene.git("merge", "--quiet", "--ff-only", "dev")
    scene.publish("main")
    scene.publish("main", "refs/users/alice/both")
    scene.checkout("dev")
    scene.git("reset", "--quiet", "--hard", "HEAD~1")
    scene.publish("dev")
    scene.checkout("main")
    proposal = services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/both",
        target_branch="dev",
        title="To dev",
    )
    response = post(scene.alice, {"repository": scene.repo.pk, "ref": "refs/users/alice/both"})
    assert f"refs/users/alice/both has open proposal #{proposal.number} on owner/project: it was kept." in (
        messages_of(response)
    )
    assert ref_exists(scene.bare, "refs/users/alice/both")
