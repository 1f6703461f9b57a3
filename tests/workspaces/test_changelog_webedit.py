"""A web edit is recorded as a push of protocol "web": one change of kind web in the
replication log, with its push and its author; a stale edit, refused, appends nothing."""

from __future__ import annotations

import pytest

from repos.errors import Conflict
from tests.repos.changelog_support import no_change, one_change
from tests.workspaces.webedit_support import edit

# The fixtures, by name (pytest finds them in the module).
from tests.workspaces.webedit_support import scene as scene
from tests.workspaces.webedit_support import seed as seed
from tests.workspaces.webedit_support import small_limit as small_limit
from workspaces.webedit import service

pytestmark = pytest.mark.django_db


def test_a_web_edit_is_one_web_change(scene):
    with one_change(scene.repo.pk, "web", actor=scene.alice, push=True) as got:
        result = service.commit_changes(edit(scene, "README.md", b"# Project\n\nEdited.\n"))
    assert got.row.push_id == result.push_id and got.row.summary == result.ref


def test_a_stale_web_edit_appends_nothing(scene):
    first = service.commit_changes(edit(scene, "README.md", b"# Project\n\nOne.\n"))
    with no_change(scene.repo.pk), pytest.raises(Conflict):
        # Built from main again while the workspace ref already moved: refused.
        service.commit_changes(edit(scene, "README.md", b"# Project\n\nTwo.\n"))
    assert scene.refs()[first.ref] == first.commit
