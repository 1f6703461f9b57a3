"""The object checks where objects move without a push: a web merge and a workspace export of
history written by old tools."""

from __future__ import annotations

import subprocess

import pytest

from gitcore.git import git_version
from repos import objectcheck
from tests.factories import RepositoryFactory, UserFactory
from tests.objectclasses import fsck_ids

LEGACY_AUTHOR = b"author Old Tool <old@example.invalid> 1112911993 -07"  # badTimezone, from a 2005 tool
SECOND_AUTHOR = b"author Second Author <second@example.invalid> 1112911993 -0700"  # multipleAuthors


class LegacyScene:
    """A repository whose main has one commit, and alice's workspace ref two more: a commit in
    legacy formats (two author lines, the first with a bad time zone; a zero-padded tree mode),
    then an ordinary one.
    They reach the bare repository by a fetch under the object checks, as an import would."""

    def __init__(self, tmp_path, env, *, main_moves: bool):
        from repos import services
        from repos.models import Role
        from tests.objectclasses import Maker

        self.env = env
        self.owner, self.alice = UserFactory(username="olga"), UserFactory(username="alice")
        self.maint = UserFactory(username="max", email="max@example.invalid")
        self.repo = RepositoryFactory(owner=self.owner, name="legacy")
        services.membership_set(repo=self.repo, user=self.maint, role=Role.MAINTAINER)
        work = self.work = tmp_path / "work"
        self.git("init", "-q", "-b", "main", str(work), here=False)
        (work / "a.txt").write_text("one\n")
        self.git("add", "a.txt")
        self.git("commit", "-q", "-m", "base")
        m = Maker(work, env)
        tree = m.tree(
            ("100644", "a.txt", self.git("rev-parse", "main:a.txt")),
            ("040000", "sub", m.tree(("100644", "x.txt", m.blob(b"x\n")))),
        )
        authors = LEGACY_AUTHOR + b"\n" + SECOND_AUTHOR
        self.legacy = m.commit(tree, [self.git("rev-parse", "main")], author=authors, message=b"old\n")
        self.legacy_tree = tree
        self.git("checkout", "-q", "-b", "feature", self.legacy)
        (work / "b.txt").write_text("bee\n")
        self.git("add", "b.txt")
        self.git("commit", "-q", "-m", "new work")
        self.git("checkout", "-q", "main")
        if main_moves:
            (work / "c.txt").write_text("sea\n")
            self.git("add", "c.txt")
            self.git("commit", "-q", "-m", "main moves")
        config = [arg for key, value in objectcheck.git_config("fetch") for arg in ("-c", f"{key}={value}")]
        self.bare(
            *config,
            "fetch",
            "-q",
            str(work),
            "+refs/heads/main:refs/heads/main",
            "+refs/heads/feature:refs/users/alice/feature",
        )

    def git(self, *args, here: bool = True) -> str:
        where = ["-C", str(self.work)] if here else []
        return subprocess.run(
            ["git", *where, *args],
            env={
                **self.env,
                "GIT_AUTHOR_DATE": "@1700000000 +0000",
                "GIT_COMMITTER_DATE": "@1700000000 +0000",
            },
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    def bare(self, *args) -> str:
        return self.git("--git-dir", str(self.repo.disk_path), *args, here=False)


@pytest.mark.django_db
@pytest.mark.parametrize("strategy", ["merge", "ff", "rebase", "squash"])
def test_a_web_merge_of_legacy_history_works(strategy, tmp_path, git_home, monkeypatch):
    from celery.app.task import Task

    from reviews import merge, services
    from reviews.models import ProposalState

    monkeypatch.setattr(Task, "apply_async", lambda *a, **k: None)  # no broker messages from on_commit
    scene = LegacyScene(tmp_path, git_home, main_moves=strategy != "ff")
    proposal = services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        target_branch="main",
        description="",
        source_ref="refs/users/alice/feature",
        title="Old history",
    )
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy=strategy)
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.MERGED and scene.bare("rev-parse", "main") == result.sha
    # the merged tree has every file; the legacy commit is in main's history, or its replay is
    files = scene.bare("ls-tree", "-r", "--name-only", result.sha).split()
    assert {"a.txt", "b.txt", "sub/x.txt"} <= set(files)
    if strategy in ("merge", "ff"):
        assert scene.bare("merge-base", "--is-ancestor", scene.legacy, "main") == ""
    if strategy == "rebase":
        replayed = scene.bare("rev-parse", "main~1")
        headers = scene.bare("cat-file", "commit", replayed).encode().split(b"\n\n")[0].split(b"\n")
        # the (first) author line kept byte for byte, the merging user as committer
        assert headers[2] == LEGACY_AUTHOR and headers[3].startswith(b"committer max <max@example.invalid> ")
        assert [h.split(b" ")[0] for h in headers] == [b"tree", b"parent", b"author", b"committer"]
    # what the merge wrote is as clean as git makes it: only the brought-in objects are legacy
    found = fsck_ids(scene.repo.disk_path, git_home, "zeroPaddedFilemode", bare=True)
    assert set(found) <= {"zeroPaddedFilemode", "badTimezone", "multipleAuthors"}
    assert found.get("zeroPaddedFilemode") == {scene.legacy_tree}


@pytest.mark.django_db
def test_a_workspace_export_of_legacy_history_builds_and_verifies(tmp_path, git_home):
    from django.utils import timezone

    from repos.models import Repository
    from workspaces import exports
    from workspaces.models import WorkspaceExport

    scene = LegacyScene(tmp_path, git_home, main_moves=True)
    Repository.objects.filter(pk=scene.repo.pk).update(deleted_at=timezone.now())
    export = exports.workspace_export_build(
        export=WorkspaceExport.objects.create(repository=scene.repo, user=scene.alice)
    )
    assert export.state == WorkspaceExport.State.READY, export.error
    bundle = exports.export_file(export)
    client = tmp_path / "client"
    scene.git("init", "-q", str(client), here=False)
    scene.git("-C", str(client), "bundle", "verify", str(bundle), here=False)
    # a client applying it under the same object checks gets the legacy history whole
    config = [arg for key, value in objectcheck.git_config("fetch") for arg in ("-c", f"{key}={value}")]
    at = ["-C", str(client)]
    spec = [str(bundle), "refs/users/alice/*:refs/remotes/alice/*"]
    fetched = subprocess.run(
        ["git", *at, *config, "fetch", "-q", *spec], env=scene.env, capture_output=True, text=True
    )
    if fetched.returncode != 0:
        # Newer gits (2.47 here) check a bundle's objects on fetch without the fetch.fsck.<id>
        # severities, so the legacy object is fatal to such a client whatever it configures:
        # it takes the export with its default checks. 2.39 honours them.
        assert git_version() > (2, 39, 99), fetched.stderr
        assert "fsck error" in fetched.stderr, fetched.stderr
        scene.git(*at, "fetch", "-q", *spec, here=False)
    tip = scene.git(*at, "rev-parse", "refs/remotes/alice/feature", here=False)
    assert tip == scene.bare("rev-parse", "refs/users/alice/feature")
    assert scene.git(*at, "rev-parse", "refs/remotes/alice/feature~1", here=False) == scene.legacy
