"""Imports in-process, with real git: which refs an import takes and reports, the operator's
synchronous import (CLI), and every object class. The web/API import's request and run are in
test_importing_runs.py, pushes, pages and the API during an import in test_importing_pages.py
(the task's work called directly; tests/repos/test_importing_live.py runs it through a real
Celery worker and the live server)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from repos import netguard
from repos.errors import ImportFailed, InvalidInput
from repos.models import LegacyObject, Push, Repository
from sources import fetching, importing
from tests.factories import UserFactory
from tests.gitutil import git
from tests.objectclasses import CASES, build
from tests.sources.importsupport import refs_of, write_hosted_source

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def hosted_source(tmp_path_factory) -> Path:
    return write_hosted_source(tmp_path_factory.mktemp("hosted"))


# --- ref selection -----------------------------------------------------------------------------


def test_namespaces_group_by_first_component():
    assert importing.namespace_of("refs/pull/1/head") == "refs/pull/"
    assert importing.namespace_of("refs/keep-around/abc") == "refs/keep-around/"
    assert importing.namespace_of("refs/stash") == "refs/stash"


def _remote(refs: list[str], head: str | None = None) -> fetching.RemoteRefs:
    return fetching.RemoteRefs({ref: "1" * 40 for ref in refs}, head)


def test_plan_takes_heads_and_tags_and_counts_the_rest():
    refs = [
        "HEAD",
        "refs/heads/main",
        "refs/heads/dev",
        "refs/tags/v1",
        *(f"refs/pull/{i}/head" for i in range(7)),
        "refs/remotes/o/main",
        "refs/stash",
    ]
    plan = importing.plan_refs(_remote(refs, "dev"), "default", display="src")
    assert plan.refspecs == list(importing.DEFAULT_REFSPECS)
    assert (plan.heads, plan.tags, plan.imported, plan.default_branch) == (2, 1, {}, "dev")
    assert plan.skipped == {"refs/pull/": 7, "refs/remotes/": 1, "refs/stash": 1}


def test_plan_all_keeps_other_namespaces_under_refs_imported_and_refuses_odd_ones():
    refs = ["refs/heads/main", "refs/pull/1/head", "refs/stash", "refs/odd*name/x", "refs/x.lock/y"]
    plan = importing.plan_refs(_remote(refs), "all", display="src")
    assert set(plan.refspecs) == {
        *importing.DEFAULT_REFSPECS,
        "+refs/pull/*:refs/imported/pull/*",
        "+refs/stash:refs/imported/stash",
    }
    assert plan.imported == {"refs/pull/": 1, "refs/stash": 1}
    assert plan.skipped == {"refs/odd*name/": 1, "refs/x.lock/": 1}
    with pytest.raises(InvalidInput):
        importing.plan_refs(_remote(refs), "everything", display="src")


def test_plan_refuses_more_refs_than_the_cap(settings):
    settings.IMPORT_MAX_REFS = 3
    refs = ["refs/heads/a", "refs/heads/b", "refs/tags/t", "refs/pull/1/head"]
    assert importing.plan_refs(_remote(refs), "default", display="src").count == 3
    with pytest.raises(ImportFailed, match="4 refs to import; an import may bring at most 3") as exc:
        importing.plan_refs(_remote(refs), "all", display="src")
    assert exc.value.code == "too_many_refs"


def test_default_branch_follows_head_else_main_master_first():
    def branch(refs, head=None):
        return importing.plan_refs(_remote(refs, head), "default", display="s").default_branch

    assert branch(["refs/heads/b", "refs/heads/main"], "b") == "b"
    assert branch(["refs/heads/b", "refs/heads/master"], "gone") == "master"
    assert branch(["refs/heads/z", "refs/heads/-x", "refs/heads/c"]) == "c"
    assert branch(["refs/tags/v1"]) is None


def test_report_reads_and_round_trips():
    report = importing.ImportReport(
        "https://example.org/p.git",
        "main",
        12,
        1,
        {"refs/keep-around/": 2},
        {"refs/pull/": 3536, "refs/stash": 1},
        3,
        [("zeroPaddedFilemode", 2), ("missingTaggerEntry", 1)],
    )
    assert report.lines() == [
        "Imported 12 branches and 1 tag from https://example.org/p.git; default branch: main.",
        "Kept 2 refs under refs/keep-around/ as refs/imported/keep-around/ (never advertised).",
        "Skipped 3,536 refs under refs/pull/.",
        "Skipped 1 ref under refs/stash.",
        "This history contains 3 objects in legacy formats: zeroPaddedFilemode (2), missingTaggerEntry (1).",
    ]
    stored = json.loads(json.dumps(report.as_dict()))
    assert importing.ImportReport.from_dict(stored) == report
    many = importing.ImportReport("s", None, 0, 0, {}, {f"refs/n{i}/": 1 for i in range(80)})
    assert len(many.as_dict()["skipped"]) == importing.REPORT_NAMESPACES + 1
    assert many.as_dict()["skipped"][importing.OTHER] == 80 - importing.REPORT_NAMESPACES


# --- the operator's import ---------------------------------------------------------------------


def test_import_takes_the_project_and_reports_the_rest(hosted_source):
    imported = importing.import_now(owner=UserFactory(), name="proj", source=str(hosted_source))
    repo, report = imported.repository, imported.report
    source_refs = refs_of(hosted_source / ".git")
    assert refs_of(repo.disk_path) == {
        r: s for r, s in source_refs.items() if r.startswith(("refs/heads/", "refs/tags/"))
    }
    assert repo.default_branch == "trunk" and (report.heads, report.tags) == (2, 2)
    assert report.skipped == {"refs/pull/": 3, "refs/remotes/": 1, "refs/keep-around/": 1, "refs/stash": 1}
    assert "Skipped 3 refs under refs/pull/." in report.lines()
    subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "fsck", "--strict"], check=True, capture_output=True
    )
    # The refs it created are in the pushlog, as a push by the importer (no commit list: the
    # history predates the pushlog).
    push = Push.objects.get(repository=repo)
    assert (push.protocol, push.pusher) == ("import", repo.owner)
    assert {(u.ref, u.old, u.new) for u in push.ref_updates.all()} == {
        (ref, "0" * 40, sha) for ref, sha in refs_of(repo.disk_path).items()
    }
    assert not push.commits.exists()


def test_import_of_all_refs_keeps_them_under_refs_imported(hosted_source):
    repo = importing.import_now(
        owner=UserFactory(), name="all", source=str(hosted_source), refs_mode="all"
    ).repository
    refs = refs_of(repo.disk_path)
    assert {
        "refs/imported/pull/1/head",
        "refs/imported/pull/2/head",
        "refs/imported/remotes/origin/trunk",
        "refs/imported/stash",
    } <= set(refs)
    assert not [r for r in refs if r.startswith(("refs/pull/", "refs/remotes/", "refs/keep-around/"))]


def test_failed_operator_import_leaves_nothing(tmp_path, settings):
    owner = UserFactory()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ImportFailed, match="Cannot list the refs"):
        importing.import_now(owner=owner, name="x", source=str(empty))
    with pytest.raises(InvalidInput):
        importing.import_now(owner=owner, name="..", source=str(empty))  # checked before any git runs
    assert not Repository.objects.exists()
    assert not list(settings.REPO_ROOT.rglob("*.git")) and not list(settings.REPO_ROOT.rglob(".tmp-*"))


@pytest.mark.django_db(transaction=True)
def test_cli_import_prints_the_report_and_repacks(hosted_source, live_env):
    import sys

    env = {**live_env}
    run = subprocess.run(
        [sys.executable, "manage.py", "user", "create", "ops"],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    run = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "repo",
            "create",
            "ops/p",
            "--import",
            str(hosted_source),
            "--refs",
            "all",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "Imported 2 branches and 2 tags from" in run.stdout
    assert "Kept 3 refs under refs/pull/ as refs/imported/pull/ (never advertised)." in run.stdout
    assert "repacked with a fresh delta search in" in run.stdout
    assert run.stdout.strip().splitlines()[-1].startswith("created ops/p (public) at ")
    repo = Repository.objects.get(name="p")
    assert repo.fresh_packed_at is not None and repo.default_branch == "trunk"
    bad = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "repo",
            "create",
            "ops/q",
            "--import",
            "https://user:hunter2@127.0.0.1:9/x.git",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert bad.returncode != 0 and "Import from https://127.0.0.1:9/x.git failed" in bad.stderr
    assert "hunter2" not in bad.stderr + bad.stdout
    assert not Repository.objects.filter(name="q").exists()


# --- every object class --------------------------------------------------------------------------


@pytest.mark.parametrize("msg_id", sorted(CASES))
def test_import_of_each_object_class(msg_id, tmp_path, git_home, settings):
    case = CASES[msg_id]
    built = build(case, tmp_path / "src", git_home)
    owner = UserFactory()
    if case.server_config:
        # The case needs configuration on the receiving repository, which an import's clone
        # (importing.transfer) does not have: check the same fetch checks into a configured one.
        target = tmp_path / "configured.git"
        git(git_home, "init", "--quiet", "--bare", str(target))
        for key, value in case.server_config:
            git(git_home, "--git-dir", str(target), "config", key, value)
        source = netguard.prepare(str(tmp_path / "src"), staff=True)
        if case.accepted:
            fetching.fetch(target, source, list(importing.DEFAULT_REFSPECS))
            return
        with pytest.raises(ImportFailed, match=msg_id):
            fetching.fetch(target, source, list(importing.DEFAULT_REFSPECS))
        return
    if case.accepted:
        imported = importing.import_now(owner=owner, name="legacy", source=str(tmp_path / "src"))
        repo = imported.repository
        present = subprocess.run(["git", "--git-dir", str(repo.disk_path), "cat-file", "-e", built.bad_oid])
        assert present.returncode == 0
        assert LegacyObject.objects.filter(repository=repo, oid=built.bad_oid, msg_id=msg_id).exists()
        assert msg_id in dict(imported.report.legacy_by_check)
        return
    with pytest.raises(ImportFailed) as exc:
        importing.import_now(owner=owner, name="refused", source=str(tmp_path / "src"))
    if not case.raw:
        # git's own upload-pack cannot walk a raw case's history, so no check runs to name.
        assert msg_id in exc.value.message and "refuse" in exc.value.message
    assert not Repository.objects.exists()
    assert not list(settings.REPO_ROOT.rglob("*.git"))


def test_a_fetch_from_a_silent_server_stops_at_its_deadline(tmp_path, git_home):
    """The server accepts the connection and never answers: git (and the helper that holds its
    stderr open) would wait forever; the deadline ends the fetch with a reason."""
    target = tmp_path / "target.git"
    git(git_home, "init", "--quiet", "--bare", str(target))
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        source = netguard.Source(
            f"http://127.0.0.1:{port}/x.git", "http://silent.example/x.git", protocols="http"
        )
        started = time.monotonic()
        with pytest.raises(fetching.FetchFailed, match="took longer than 2 s"):
            fetching.fetch(target, source, list(importing.DEFAULT_REFSPECS), timeout=2)
        assert time.monotonic() - started < 20
