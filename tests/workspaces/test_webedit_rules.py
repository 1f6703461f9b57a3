"""Who may commit on the web and where, judged as a push is: stale edits, the branch moving
meanwhile, maintainers on branches, proposals' refs, bans, freezes, take-downs, ref limits."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.models import Mirror, Push, RepositoryImport
from reviews import services as review_services
from tests.eager import run_followers
from tests.factories import UserFactory
from tests.workspaces.webedit_support import assert_nothing_happened, blob_id, edit, request

# The fixtures, by name (pytest finds them in the module).
from tests.workspaces.webedit_support import scene as scene
from tests.workspaces.webedit_support import seed as seed
from tests.workspaces.webedit_support import small_limit as small_limit
from workspaces import moderation
from workspaces.models import RepositoryBan, Workspace, WorkspaceSettings
from workspaces.webedit import service
from workspaces.webedit.types import FileChange

pytestmark = pytest.mark.django_db

README = b"# Project\n\nEdited.\n"


# --- stale edits and moving refs ---------------------------------------------------------------


def test_stale_edit_is_a_conflict_and_changes_nothing(scene):
    scene.move_main({"README.md": b"# Project\n\nChanged on main.\n"})
    refs = scene.refs()
    with pytest.raises(Conflict) as caught:
        service.commit_changes(edit(scene, "README.md", README))
    assert caught.value.code == "stale_edit" and "changed since you loaded the page" in caught.value.message
    assert_nothing_happened(scene, refs)


def test_branch_moved_but_file_unchanged_applies_on_the_base(scene):
    moved = scene.move_main({"docs/intro.md": b"Intro, moved\n"})
    result = service.commit_changes(edit(scene, "README.md", README))
    assert scene.show(result.commit, "%P") == scene.main != moved
    assert scene.blob(result.commit, "docs/intro.md") == b"Intro\n"


def test_maintainer_commits_to_the_branch_on_its_current_tip(scene):
    moved = scene.move_main({"docs/intro.md": b"Intro, moved\n"})
    result = service.commit_changes(edit(scene, "README.md", README, user=scene.maint, target="branch"))
    assert result.ref == "refs/heads/main" and not result.created and result.proposal_url is None
    assert scene.refs()["refs/heads/main"] == result.commit
    assert scene.show(result.commit, "%P") == moved  # a fast-forward, never a rewrite
    assert scene.blob(result.commit, "docs/intro.md") == b"Intro, moved\n"
    push = Push.objects.get(pk=result.push_id)
    assert push.protocol == "web" and not push.touches_workspace
    assert [(u.ref, u.old, u.new) for u in push.ref_updates.all()] == [
        ("refs/heads/main", moved, result.commit)
    ]


def test_maintainer_stale_branch_edit_is_a_conflict(scene):
    scene.move_main({"README.md": b"# Project\n\nChanged on main.\n"})
    refs = scene.refs()
    with pytest.raises(Conflict):
        service.commit_changes(edit(scene, "README.md", README, user=scene.maint, target="branch"))
    assert_nothing_happened(scene, refs)


def test_editing_on_an_own_workspace_ref_follows_it(scene):
    first = service.commit_changes(edit(scene, "README.md", README))
    change = FileChange("edit", "crlf.txt", b"one\ntwo\nmore\n", blob_id(scene, "crlf.txt", first.commit))
    second = service.commit_changes(request(scene, change, base_ref=first.ref, base_commit=first.commit))
    assert second.ref == first.ref and not second.created
    assert scene.show(second.commit, "%P") == first.commit
    assert scene.blob(second.commit, "crlf.txt") == b"one\r\ntwo\r\nmore\r\n"
    assert Push.objects.get(pk=second.push_id).ref_updates.get().old == first.commit


@pytest.mark.parametrize("target", ["workspace", "branch"])
def test_a_push_landing_while_committing_wins(scene, monkeypatch, target):
    """Pushes do not take the repository's lock: one may move the ref between the check and
    the swap. The swap then fails and nothing of the edit lands."""
    ref = "refs/heads/main" if target == "branch" else "refs/users/maint/web-edit"
    pushed = scene.git("commit-tree", f"{scene.main}^{{tree}}", "-p", scene.main, "-m", "pushed").strip()

    def push_meanwhile(repo, ref_, old, new):
        assert ref_ == ref
        scene.git("update-ref", ref, pushed)

    monkeypatch.setattr(service, "before_swap", push_meanwhile)
    with pytest.raises(Conflict) as caught:
        service.commit_changes(edit(scene, "README.md", README, user=scene.maint, target=target))
    assert "moved while committing" in caught.value.message
    assert scene.refs()[ref] == pushed
    assert not Push.objects.exists()


def test_an_existing_ref_name_is_not_overwritten(scene):
    first = service.commit_changes(edit(scene, "README.md", README))
    refs = scene.refs()
    with pytest.raises(Conflict) as caught:
        service.commit_changes(edit(scene, "crlf.txt", b"other\n"))
    assert caught.value.code == "ref_exists" and "edit-crlf" in caught.value.message
    assert scene.refs() == refs and Push.objects.filter(repository=scene.repo).count() == 1
    assert scene.refs()[first.ref] == first.commit


def test_a_name_blocked_by_another_ref_is_refused(scene):
    service.commit_changes(edit(scene, "README.md", README, name="topic/one"))
    refs = scene.refs()
    for name in ("topic", "topic/one/deeper"):
        with pytest.raises(InvalidInput) as caught:
            service.commit_changes(edit(scene, "README.md", README, name=name))
        assert "another ref's name is in the way" in caught.value.message
    assert scene.refs() == refs and Push.objects.count() == 1


# --- who may -----------------------------------------------------------------------------------


def test_contributor_cannot_commit_to_a_branch(scene):
    refs = scene.refs()
    with pytest.raises(Forbidden) as caught:
        service.commit_changes(edit(scene, "README.md", README, target="branch"))
    assert "you need write access to push to refs/heads/main" in caught.value.message
    assert_nothing_happened(scene, refs)


def test_a_mirrors_branches_refuse_web_commits_too(scene):
    Mirror.objects.create(repository=scene.repo, url="https://example.invalid/upstream.git")
    with pytest.raises(Forbidden) as caught:
        service.commit_changes(edit(scene, "README.md", README, user=scene.maint, target="branch"))
    assert "mirrors an upstream" in caught.value.message


def _ban(scene):
    RepositoryBan.objects.create(repository=scene.repo, user=scene.alice, reason="spam")


def _freeze(scene):
    Workspace.objects.create(repository=scene.repo, user=scene.alice, frozen=True)


def _take_down(scene):
    Workspace.objects.create(repository=scene.repo, user=scene.alice, taken_down=True)


def _deactivate(scene):
    scene.alice.is_active = False
    scene.alice.save()


def _import(scene):
    RepositoryImport.objects.create(
        repository=scene.repo,
        full_name=scene.repo.full_name,
        source_url="https://example.invalid/x.git",
        state="running",
    )


def _delete(scene):
    scene.repo.deleted_at = timezone.now()
    scene.repo.save()
    scene.alice.is_staff = True  # staff still see a deleted repository; nobody writes to it
    scene.alice.save()


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (_ban, "banned"),
        (_freeze, "frozen"),
        (_take_down, "taken down"),
        (_deactivate, "deactivated"),
        (_import, "being imported"),
        (_delete, "deleted"),
    ],
)
def test_refused_as_a_push_would_be(scene, setup, words):
    setup(scene)
    refs = scene.refs()
    with pytest.raises(Forbidden) as caught:
        service.commit_changes(edit(scene, "README.md", README))
    assert words in caught.value.message
    assert_nothing_happened(scene, refs)


def test_anonymous_and_outsiders(scene):
    with pytest.raises(Forbidden):
        service.commit_changes(edit(scene, "README.md", README, user=AnonymousUser()))
    scene.repo.visibility = "private"
    scene.repo.save()
    with pytest.raises(NotFound):  # a private repository does not exist to outsiders
        service.commit_changes(edit(scene, "README.md", README, user=UserFactory(username="outsider")))
    assert not Push.objects.exists()


def test_the_ref_limit_applies(scene):
    WorkspaceSettings.objects.create(repository=scene.repo, ref_limit=1)
    service.commit_changes(edit(scene, "README.md", README))
    with pytest.raises(Forbidden) as caught:
        service.commit_changes(edit(scene, "README.md", README, name="second"))
    assert "already holds 1 refs, the limit" in caught.value.message


def test_work_taken_down_cannot_be_built_on(scene, monkeypatch):
    run_followers(monkeypatch)
    taken = service.commit_changes(edit(scene, "README.md", README))
    staff = UserFactory(username="staff", is_staff=True)
    moderation.do_take_down_workspace(repo=scene.repo, user=scene.alice, acting_user=staff, reason="DMCA")
    refs = scene.refs()
    change = FileChange("edit", "crlf.txt", b"x\n", blob_id(scene, "crlf.txt", taken.commit))
    with pytest.raises(Forbidden) as caught:  # a new ref on top of it would publish it again
        service.commit_changes(
            request(scene, change, user=scene.bob, base_ref=taken.ref, base_commit=taken.commit)
        )
    assert caught.value.code == "content_taken_down"
    assert scene.refs() == refs


# --- proposals' refs ---------------------------------------------------------------------------


@pytest.fixture
def proposed(scene):
    first = service.commit_changes(edit(scene, "README.md", README))
    proposal = review_services.proposal_open(
        repo=scene.repo, user=scene.alice, source_ref=first.ref, target_branch="main", title="Edit the README"
    )
    return first, proposal


def _on_proposal(scene, first, user, on: str | None = None):
    """An edit of README.md on the proposal's ref, made on the page of commit `on`."""
    on = on or first.commit
    text = f"# Project\n\nEdited again by {user.username}.\n".encode()
    change = FileChange("edit", "README.md", text, blob_id(scene, "README.md", on))
    return request(scene, change, user=user, base_ref=first.ref, base_commit=on, name=first.ref)


def test_a_maintainers_edit_of_a_proposal_is_a_new_revision(
    scene, proposed, monkeypatch, django_capture_on_commit_callbacks
):
    first, proposal = proposed
    run_followers(monkeypatch)  # the tasks that follow a push (proposals among them) run at once
    with django_capture_on_commit_callbacks(execute=True):
        result = service.commit_changes(_on_proposal(scene, first, scene.maint))
    assert result.ref == first.ref and scene.show(result.commit, "%P") == first.commit
    assert scene.show(result.commit, "%an") == "maint"
    revisions = list(proposal.revisions.order_by("number").values_list("head_sha", flat=True))
    assert revisions == [first.commit, result.commit]


def test_who_may_edit_a_proposals_ref(scene, proposed):
    first, _proposal = proposed
    with pytest.raises(Forbidden) as caught:  # a reader, in alice's workspace
        service.commit_changes(_on_proposal(scene, first, scene.bob))
    assert "is in alice's workspace" in caught.value.message
    WorkspaceSettings.objects.create(repository=scene.repo, maintainers_may_edit=False)
    with pytest.raises(Forbidden):
        service.commit_changes(_on_proposal(scene, first, scene.maint))
    by_admin = service.commit_changes(_on_proposal(scene, first, scene.owner))  # admins always may
    with pytest.raises(Conflict):  # alice's page still shows the README before the admin's edit
        service.commit_changes(_on_proposal(scene, first, scene.alice))
    by_author = service.commit_changes(_on_proposal(scene, first, scene.alice, on=by_admin.commit))
    assert scene.refs()[first.ref] == by_author.commit
    assert scene.show(by_author.commit, "%P") == by_admin.commit
