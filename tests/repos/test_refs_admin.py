"""Admins remove refs (repos/refs_admin.py, listed by repos/refs_listing.py): the service, on
the scene of tests/repos/refs_admin_scene.py. Every refusal leaves every ref where it was and
records nothing."""

from __future__ import annotations

import time

import pytest

from gitcore.git import run_git
from repos import refs_admin, refs_listing
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.models import AuditEntry, Mirror, Push
from tests.factories import UserFactory
from tests.repos.refs_admin_scene import XSS, ZERO, make_scene, on_disk, put_refs, unchanged

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene():
    return make_scene()


def test_namespaces_with_counts_and_pages(scene):
    listing = refs_listing.refs_list(scene.repo, "")
    counts = {ns.prefix: ns.count for ns in listing.namespaces}
    assert counts == {
        "refs/heads/": 3,
        "refs/tags/": 2,
        "refs/pull/": 4,
        "refs/remotes/": 2,
        "refs/keep-around/": 1,
        "refs/notes/": 1,
        "refs/stash": 1,
        "refs/imported/pull/": 1,
        "refs/imported/remotes/": 1,
    }
    assert [ns.prefix for ns in listing.namespaces][:2] == ["refs/heads/", "refs/tags/"]
    assert not any(e.ref.startswith(("refs/users/", "refs/archive/", "refs/takedown/")) for e in listing.refs)
    pulls = refs_listing.refs_list(scene.repo, "refs/pull/", page=2, per_page=3)
    assert (pulls.prefix, pulls.total, pulls.page, pulls.pages) == ("refs/pull", 4, 2, 2)
    assert [e.ref for e in pulls.refs] == [XSS]  # byte order: 1/head, 2/head, 2/merge, <b>...
    assert refs_listing.refs_list(scene.repo, "refs/pull").total == 4  # the slash is optional
    assert refs_listing.refs_list(scene.repo, "refs/pul").total == 0  # whole components only
    head = next(e for e in refs_listing.refs_list(scene.repo, "refs/remotes/").refs if e.ref.endswith("HEAD"))
    assert head.symref == "refs/remotes/origin/main"
    for bad in ("refs/users/", "refs/archive", "refs/takedown/bob", "heads", "refs/a..b", "refs/x\ny", 7):
        with pytest.raises(InvalidInput):
            refs_listing.refs_list(scene.repo, bad)


def test_an_admin_removes_refs_recorded_as_a_push(scene):
    removal = refs_admin.ref_remove(
        repo=scene.repo, refs=["refs/pull/1/head", "refs/stash", "refs/tags/v2"], actor=scene.owner, via="web"
    )
    after = on_disk(scene.repo)
    assert {"refs/pull/1/head", "refs/stash", "refs/tags/v2"}.isdisjoint(after)
    assert len(after) == len(scene.before) - 3
    push = removal.push
    assert (push.pusher, push.protocol, push.repository) == (scene.owner, "web", scene.repo)
    updates = {u.ref: (u.old, u.new) for u in push.ref_updates.all()}
    assert updates == {
        "refs/pull/1/head": (scene.c2, ZERO),
        "refs/stash": (scene.c3, ZERO),
        "refs/tags/v2": (scene.before["refs/tags/v2"], ZERO),
    }  # the tag object, not the commit
    entry = AuditEntry.objects.get(action="ref_remove")
    assert (entry.actor, entry.repository) == (scene.owner, scene.repo)
    assert entry.detail["refs"] == {ref: scene.before[ref] for ref in updates}
    assert entry.detail["via"] == "web"


def test_a_symbolic_ref_goes_not_the_branch_it_points_at(scene):
    refs_admin.ref_remove(repo=scene.repo, refs=["refs/remotes/origin/HEAD"], actor=scene.owner, via="api")
    after = on_disk(scene.repo)
    assert "refs/remotes/origin/HEAD" not in after and after["refs/remotes/origin/main"] == scene.c2


@pytest.mark.parametrize(
    "refs, error, words",
    [
        (["refs/users/alice/x"], InvalidInput, "workspace ref"),
        (["refs/archive/alice/1"], InvalidInput, "internal to the platform"),
        (["refs/takedown/bob/y"], InvalidInput, "internal to the platform"),
        (["refs/heads/main"], Forbidden, "default branch and cannot be deleted"),
        (["refs/heads/release"], Forbidden, "protected branch and cannot be deleted"),
        (["refs/pull/2/head", "refs/heads/main"], Forbidden, "default branch"),  # all or none
        (["refs/pull/9/head"], NotFound, "does not exist"),
        (["refs/pull/1/head", "refs/pull/9/head"], NotFound, "does not exist"),
        (["refs/heads/a..b"], InvalidInput, "not a valid ref name"),
        (["HEAD"], InvalidInput, "not a ref name"),
        (["refs/pull/1/head\ndelete refs/heads/main"], InvalidInput, "not a ref name"),
        (["refs/" + "x" * 260], InvalidInput, "not a ref name"),
        ([], InvalidInput, "list of full ref names"),
        ("refs/pull/1/head", InvalidInput, "list of full ref names"),
        ([["refs/pull/1/head"]], InvalidInput, "not a ref name"),
        ([None], InvalidInput, "not a ref name"),
    ],
)
def test_what_cannot_be_removed_changes_nothing(scene, refs, error, words):
    with pytest.raises(error) as exc:
        refs_admin.ref_remove(repo=scene.repo, refs=refs, actor=scene.owner, via="api")
    assert words in exc.value.message
    assert unchanged(scene)
    assert not AuditEntry.objects.exists()


def test_only_admins_remove_and_a_mirror_keeps_its_branches_and_tags(scene):
    for user in (scene.maint, scene.reader, scene.alice, UserFactory(username="staff", is_staff=True)):
        with pytest.raises(Forbidden):
            refs_admin.ref_remove(repo=scene.repo, refs=["refs/pull/1/head"], actor=user, via="api")
        with pytest.raises(Forbidden):
            refs_admin.namespace_remove(repo=scene.repo, prefix="refs/pull/", actor=user, via="web")
    Mirror.objects.create(repository=scene.repo, url="https://example.org/up.git")
    for ref in ("refs/heads/feature", "refs/tags/v1"):
        with pytest.raises(Forbidden, match="come back at the next"):
            refs_admin.ref_remove(repo=scene.repo, refs=[ref], actor=scene.owner, via="web")
    with pytest.raises(Forbidden):
        refs_admin.namespace_remove(repo=scene.repo, prefix="refs/tags/", actor=scene.owner, via="web")
    assert unchanged(scene)
    refs_admin.ref_remove(
        repo=scene.repo, refs=["refs/pull/1/head"], actor=scene.owner, via="web"
    )  # still fine


def test_compare_and_delete_keeps_a_ref_that_moved(scene):
    with pytest.raises(Conflict, match="moved since you looked"):
        refs_admin.ref_remove(
            repo=scene.repo,
            refs=["refs/pull/1/head"],
            actor=scene.owner,
            via="web",
            expected={"refs/pull/1/head": scene.c1},
        )
    assert unchanged(scene)

    def push_lands(repo, entries):  # a push moving one of them between the read and the delete
        run_git(["update-ref", "refs/pull/2/head", scene.c1], repo=repo.disk_path)

    refs_admin.before_delete = push_lands
    try:
        with pytest.raises(Conflict, match="nothing was removed"):
            refs_admin.namespace_remove(repo=scene.repo, prefix="refs/pull/", actor=scene.owner, via="web")
    finally:
        refs_admin.before_delete = refs_admin._noop
    after = on_disk(scene.repo)
    assert after["refs/pull/2/head"] == scene.c1 and after["refs/pull/1/head"] == scene.c2
    assert not Push.objects.exists()


def test_a_namespace_goes_in_one_transaction(scene):
    for bad in ("", "refs", "refs/", "refs/users/", "refs/users/alice", "refs/archive/", "x/y", "refs/a b"):
        with pytest.raises(InvalidInput):
            refs_admin.namespace_remove(repo=scene.repo, prefix=bad, actor=scene.owner, via="web")
    with pytest.raises(NotFound):
        refs_admin.namespace_remove(repo=scene.repo, prefix="refs/changes/", actor=scene.owner, via="web")
    with pytest.raises(Forbidden, match="default branch"):
        refs_admin.namespace_remove(repo=scene.repo, prefix="refs/heads", actor=scene.owner, via="web")
    assert unchanged(scene)
    removal = refs_admin.namespace_remove(
        repo=scene.repo, prefix="refs/imported/", actor=scene.owner, via="api"
    )
    assert sorted(e.ref for e in removal.removed) == [
        "refs/imported/pull/7/head",
        "refs/imported/remotes/origin/main",
    ]
    assert not any(ref.startswith("refs/imported/") for ref in on_disk(scene.repo))
    assert removal.push.ref_updates.count() == 2


@pytest.mark.parametrize("how", ["namespace", "list"])
def test_five_thousand_refs_at_once(scene, how):
    refs = {f"refs/pull/{n}/head": (scene.c1, scene.c2, scene.c3)[n % 3] for n in range(100, 5100)}
    put_refs(scene.repo, refs)
    run_git(["pack-refs", "--all"], repo=scene.repo.disk_path)  # as a fetch of thousands leaves them
    start = time.monotonic()
    if how == "namespace":
        removal = refs_admin.namespace_remove(
            repo=scene.repo, prefix="refs/pull/", actor=scene.owner, via="api"
        )
    else:
        removal = refs_admin.ref_remove(repo=scene.repo, refs=list(refs), actor=scene.owner, via="api")
    took = time.monotonic() - start
    after = on_disk(scene.repo)
    assert not any(ref in after for ref in refs)
    expected = 5004 if how == "namespace" else 5000
    assert len(removal.removed) == expected and removal.push.ref_updates.count() == expected
    assert Push.objects.filter(repository=scene.repo).count() == 1
    assert took < 30, took
    print(f"removed {expected} refs ({how}) in {took:.2f}s")
