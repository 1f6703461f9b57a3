"""Search never returns what the viewer may not read: private repositories (found by their
members only, and at once after a repository is made private), hidden workspaces' proposals,
and taken-down content, including content that was indexed before its take-down."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from gitcore.git import run_git
from repos import services
from repos.lifecycle import repository_soft_delete
from repos.models import Role
from reviews.models import Proposal
from search import backend
from search.models import CommitEntry, ProposalEntry
from search.query import parse
from tests.eager import run_followers
from tests.factories import UserFactory
from workspaces import moderation

pytestmark = pytest.mark.django_db

ANON = AnonymousUser()
KINDS_WITH_CONTENT = ("code", "commits", "repositories", "proposals")


def finds(user, kind, text) -> bool:
    """Whether the search finds anything; its count must agree (a count must not tell of
    what the results leave out)."""
    hits = backend.find(kind, parse(text), user, 0, 50)
    assert backend.count(kind, parse(text), user) == len(hits)
    return bool(hits)


def secret_project(make_work, private=True):
    work = make_work("secretproject", private=private, description="zanzibar plans")
    work.write({"plan.txt": "zanzibar treasure map\n"}, message="zanzibar commit")
    work.index()
    Proposal.objects.create(
        repository=work.repo,
        number=1,
        author=work.repo.owner,
        source_ref="refs/users/owner/p",
        target_branch="main",
        title="zanzibar proposal",
    )
    return work


def test_private_content_is_found_by_members_only(make_work):
    work = secret_project(make_work)
    outsider = UserFactory(username="outsider")
    reader = UserFactory(username="reader")
    services.membership_set(repo=work.repo, user=reader, role=Role.READER)
    staff = UserFactory(username="staff", is_staff=True)
    for kind in KINDS_WITH_CONTENT:
        assert not finds(ANON, kind, "zanzibar"), kind
        assert not finds(outsider, kind, "zanzibar"), kind
        assert finds(reader, kind, "zanzibar"), kind
        assert finds(work.repo.owner, kind, "zanzibar"), kind
        assert finds(staff, kind, "zanzibar"), kind


def test_made_private_is_not_found_by_outsiders_at_once(make_work):
    work = secret_project(make_work, private=False)
    reader = UserFactory(username="reader")
    services.membership_set(repo=work.repo, user=reader, role=Role.READER)
    for kind in KINDS_WITH_CONTENT:
        assert finds(ANON, kind, "zanzibar"), kind
    services.repository_update(repo=work.repo, visibility="private")
    for kind in KINDS_WITH_CONTENT:
        assert not finds(ANON, kind, "zanzibar"), kind
        assert not finds(UserFactory(username=f"x{kind}"), kind, "zanzibar"), kind
        assert finds(reader, kind, "zanzibar"), kind
    # The rows were kept: nothing had to be reindexed for either answer.
    assert CommitEntry.objects.filter(repository=work.repo).exists()


def test_deleted_repositories_are_not_found(make_work):
    work = secret_project(make_work, private=False)
    repository_soft_delete(repo=work.repo, acting_user=work.repo.owner)
    for kind in KINDS_WITH_CONTENT:
        assert not finds(work.repo.owner, kind, "zanzibar"), kind


def _workspace_commit(work, username: str, message: str) -> str:
    """A commit that was on a branch (and indexed), then left only in a user's workspace."""
    sha = work.write({f"{username}.txt": message}, message=message, branch="topic")
    work.index()
    work.publish(f"refs/users/{username}/topic")
    run_git(["update-ref", "-d", "refs/heads/topic"], repo=work.repo.disk_path)
    return sha


def test_take_down_of_indexed_content(make_work, monkeypatch, django_capture_on_commit_callbacks):
    run_followers(monkeypatch, frozenset({"search.tasks.follow_moderation"}))
    work = make_work("open", private=False)
    work.write({"base.txt": "base"}, message="base")
    alice = UserFactory(username="alice")
    sha = _workspace_commit(work, "alice", "quetzalcoatl secret work")
    Proposal.objects.create(
        repository=work.repo,
        number=1,
        author=alice,
        source_ref="refs/users/alice/topic",
        target_branch="main",
        title="quetzalcoatl proposal",
    )
    assert finds(ANON, "commits", "quetzalcoatl")
    assert finds(ANON, "proposals", "quetzalcoatl")
    staff = UserFactory(username="staff", is_staff=True)
    with django_capture_on_commit_callbacks(execute=True):
        moderation.do_take_down_workspace(repo=work.repo, user=alice, acting_user=staff, reason="legal")
    for user in (ANON, alice, work.repo.owner, UserFactory(username="bob")):
        assert not finds(user, "commits", "quetzalcoatl")
        assert not finds(user, "proposals", "quetzalcoatl")
    # Removed from the index, not only filtered.
    assert not CommitEntry.objects.filter(repository=work.repo, sha=sha).exists()
    assert not ProposalEntry.objects.filter(repository=work.repo).exists()
    # Saving the proposal again (a comment, a state change) does not bring it back.
    Proposal.objects.get(repository=work.repo).save()
    assert not ProposalEntry.objects.filter(repository=work.repo).exists()
    # Lifting the take-down brings the proposal back.
    with django_capture_on_commit_callbacks(execute=True):
        moderation.do_lift_take_down(repo=work.repo, user=alice, acting_user=staff, reason="cleared")
    assert finds(ANON, "proposals", "quetzalcoatl")


def test_taken_down_commit_is_filtered_before_the_index_forgets_it(make_work):
    """Between the take-down and its task, the query itself leaves the commit out."""
    work = make_work("open", private=False)
    work.write({"base.txt": "base"}, message="base")
    alice = UserFactory(username="alice")
    _workspace_commit(work, "alice", "quetzalcoatl secret work")
    staff = UserFactory(username="staff", is_staff=True)
    moderation.do_take_down_workspace(repo=work.repo, user=alice, acting_user=staff, reason="legal")
    assert CommitEntry.objects.filter(message__contains="quetzalcoatl").exists()  # not forgotten yet
    assert not finds(ANON, "commits", "quetzalcoatl")
    assert not finds(alice, "commits", "quetzalcoatl")
    assert finds(staff, "commits", "quetzalcoatl")


def test_hidden_workspace_proposals_are_seen_by_owner_and_admins_only(make_work):
    work = make_work("open", private=False)
    work.write({"base.txt": "base"}, message="base")
    alice = UserFactory(username="alice")
    _workspace_commit(work, "alice", "hidden topic work")
    Proposal.objects.create(
        repository=work.repo,
        number=1,
        author=alice,
        source_ref="refs/users/alice/topic",
        target_branch="main",
        title="mysterious proposal",
    )
    moderation.do_hide_workspace(repo=work.repo, user=alice, acting_user=work.repo.owner, reason="spam?")
    assert not finds(ANON, "proposals", "mysterious")
    assert not finds(UserFactory(username="bob"), "proposals", "mysterious")
    assert finds(alice, "proposals", "mysterious")
    assert finds(work.repo.owner, "proposals", "mysterious")
    assert not finds(ANON, "commits", "hidden topic")
    assert finds(alice, "commits", "hidden topic")


def test_a_purged_repository_leaves_the_index(make_work):
    from datetime import timedelta

    from django.utils import timezone

    from repos.lifecycle import repository_purge
    from repos.models import Repository
    from search.models import CodeFile, RepositoryEntry

    work = secret_project(make_work, private=False)
    repository_soft_delete(repo=work.repo, acting_user=work.repo.owner)
    Repository.objects.filter(pk=work.repo.pk).update(deleted_at=timezone.now() - timedelta(days=365))
    assert repository_purge(repo_id=work.repo.pk)
    for model in (CodeFile, CommitEntry, RepositoryEntry, ProposalEntry):
        assert not model.objects.filter(repository_id=work.repo.pk).exists(), model
