"""Stale workspace refs (workspaces.stale): which refs count, and the owner-only archive."""

from __future__ import annotations

import pytest

from gitcore.git import run_git
from gitcore.gittools import ref_exists
from repos.errors import Forbidden
from tests.factories import RepositoryFactory
from tests.reviews.conftest import Scene
from workspaces.stale import stale_refs, stale_refs_archive

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(tmp_path, git_home) -> Scene:
    return Scene(tmp_path, git_home)


def test_at_or_behind_the_default_branch_is_stale_ahead_is_not(scene):
    old = scene.tip("refs/heads/main")
    scene.publish("main", "refs/users/alice/copy")
    scene.commit("main moves", {"m.txt": "m\n"})
    main = scene.publish("main")
    run_git(["update-ref", "refs/users/alice/behind", old], repo=scene.bare)
    scene.checkout("feature", "main")
    scene.commit("work", {"w.txt": "w\n"})
    scene.publish("feature", "refs/users/alice/ahead")
    scene.publish("main", "refs/users/alice/now")
    scene.publish("main", "refs/users/bob/main")
    assert stale_refs(scene.repo, "alice") == {
        "refs/users/alice/copy": old,
        "refs/users/alice/behind": old,
        "refs/users/alice/now": main,
    }
    assert stale_refs(scene.repo, "carol") == {}


def test_no_default_branch_no_stale_refs(tmp_path, git_home):
    assert stale_refs(RepositoryFactory(name="empty"), "alice") == {}


def test_archive_takes_own_stale_refs_only(scene):
    scene.publish("main", "refs/users/alice/copy")
    scene.publish("main", "refs/users/bob/copy")
    with pytest.raises(Forbidden):
        stale_refs_archive(
            repo=scene.repo, user=scene.alice, refs=["refs/users/alice/copy", "refs/users/bob/copy"]
        )
    assert ref_exists(scene.bare, "refs/users/alice/copy") and ref_exists(scene.bare, "refs/users/bob/copy")
    # A ref that moved on since the page showed it is no longer stale: kept.
    scene.checkout("feature", "main")
    scene.commit("work", {"w.txt": "w\n"})
    scene.publish("feature", "refs/users/alice/copy")
    assert stale_refs_archive(repo=scene.repo, user=scene.alice, refs=["refs/users/alice/copy"]) == []
    assert ref_exists(scene.bare, "refs/users/alice/copy")
