"""Imports in-process, with real git: which refs an import takes and reports, the operator's
synchronous import (CLI), every object class, and the web/API import's request, run, claim,
cancel and failures (the task's work called directly; tests/repos/test_importing_live.py runs
it through a real Celery worker and the live server)."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from repos import fetching, import_requests, import_runs, importing, netguard, sealing, services
from repos.errors import Conflict, Forbidden, ImportFailed, InvalidInput
from repos.models import ImportState, LegacyObject, Membership, Push, Repository, RepositoryImport, Role
from repos.netguard import SourceRefused
from tests.factories import UserFactory
from tests.gitutil import git
from tests.objectclasses import CASES, build

pytestmark = pytest.mark.django_db
SECRET = "s3cret-token-4711"  # a test credential, checked for where it must not be


def refs_of(path: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def client_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@x.invalid",
        "GIT_COMMITTER_NAME": "C",
        "GIT_COMMITTER_EMAIL": "c@x.invalid",
    }


@pytest.fixture(scope="module")
def hosted_source(tmp_path_factory) -> Path:
    """A repository as a host keeps it: the project (trunk, dev, two tags) and the host's
    internals (pull requests, remote-tracking branches, keep-around refs, a stash)."""
    path = tmp_path_factory.mktemp("hosted") / "src"
    env = client_env(path.parent / "home")
    git(env, "init", "--quiet", "-b", "trunk", str(path))
    for i in range(3):
        (path / "f.txt").write_text(f"{i}\n")
        git(env, "add", "f.txt", cwd=path)
        git(env, "commit", "--quiet", "-m", f"c{i}", cwd=path)
    git(env, "tag", "-a", "v1", "-m", "one", cwd=path)
    git(env, "tag", "v2", cwd=path)
    git(env, "branch", "dev", cwd=path)
    head = git(env, "rev-parse", "HEAD", cwd=path).stdout.strip()
    for ref in [
        "refs/pull/1/head",
        "refs/pull/1/merge",
        "refs/pull/2/head",
        "refs/remotes/origin/trunk",
        f"refs/keep-around/{head}",
        "refs/stash",
    ]:
        git(env, "update-ref", ref, head, cwd=path)
    return path


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


# --- the web and API import: the request -------------------------------------------------------


def test_request_checks_everything_before_creating_anything(settings, tmp_path):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = False
    user = UserFactory(username="ursula")
    tmp_path.joinpath("here").mkdir()
    for source in [
        "file:///etc",
        str(tmp_path / "here"),
        "ext::sh -c touch% /tmp/pwned",
        "ssh://host/x.git",
        "http://127.0.0.1/x.git",
        "http://[::1]/x.git",
        "http://169.254.169.254/latest",
        "http://10.0.0.1/x.git",
        "ftp://example.org/x",
        "",
        "http://exa mple.org/x",
    ]:
        with pytest.raises(SourceRefused):
            import_requests.import_request(requester=user, name="p", source=source)
    with pytest.raises(Forbidden, match="Only site staff"):
        import_requests.import_request(
            requester=user, name="p", source="http://127.0.0.1/x.git", refs_mode="all"
        )
    with pytest.raises(InvalidInput, match="credentials are never stored"):
        import_requests.import_request(
            requester=user, name="p", source="http://u:p@127.0.0.1/x.git", mirror=True
        )
    with pytest.raises(InvalidInput):
        import_requests.import_request(
            requester=user, name="p", source="https://x.invalid/x", username="a:b", password="x"
        )
    services.repository_create(owner=user, name="taken")
    with pytest.raises(Conflict):
        import_requests.import_request(requester=user, name="taken", source="http://127.0.0.1/x.git")
    assert Repository.objects.count() == 1 and not RepositoryImport.objects.exists()


def test_request_strips_credentials_and_seals_them(settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    sent = []
    monkeypatch.setattr("repos.tasks.run_import.delay", lambda *args: sent.append(args))
    user = UserFactory()
    with django_capture_on_commit_callbacks(execute=True):
        imp = import_requests.import_request(
            requester=user, name="p", source=f"http://bob:{SECRET}@127.0.0.1:9/x.git"
        )
    assert imp.source_url == "http://127.0.0.1:9/x.git" and imp.state == ImportState.QUEUED
    assert imp.repository.full_name == imp.full_name == f"{user.username}/p"
    ((import_id, sealed),) = sent
    assert import_id == imp.pk and SECRET not in sealed and "bob" not in sealed
    assert sealing.unseal(sealed, purpose=import_requests.SEAL_PURPOSE) == {"u": "bob", "p": SECRET}
    row = RepositoryImport.objects.filter(pk=imp.pk).values().get()
    assert SECRET not in json.dumps(row, default=str)


def test_sealing_refuses_tampering_other_purposes_and_old_values():
    token = sealing.seal({"u": "a", "p": "b"}, purpose="x")
    assert sealing.unseal(token, purpose="x") == {"u": "a", "p": "b"}
    for bad in [token[:-4] + "AAAA", "garbage", ""]:
        with pytest.raises(sealing.SealBroken):
            sealing.unseal(bad, purpose="x")
    with pytest.raises(sealing.SealBroken):
        sealing.unseal(token, purpose="y")
    with pytest.raises(sealing.SealBroken):
        sealing.unseal(token, purpose="x", max_age=-1)


# --- the web and API import: the run ------------------------------------------------------------


@pytest.fixture
def staff(db):
    return UserFactory(username="stan", is_staff=True)


def _queued(staff, source: Path, name="p", **kwargs) -> RepositoryImport:
    return import_requests.import_request(requester=staff, name=name, source=str(source), **kwargs)


def test_run_imports_reports_and_queues_the_fresh_repack(
    staff, hosted_source, monkeypatch, django_capture_on_commit_callbacks
):
    repacks = []
    monkeypatch.setattr("repos.tasks.repack_fresh.delay", lambda repo_id: repacks.append(repo_id))
    imp = _queued(staff, hosted_source)
    assert refs_of(imp.repository.disk_path) == {}
    with django_capture_on_commit_callbacks(execute=True):
        assert import_runs.run_import(imp.pk, None).state == ImportState.DONE
    imp.refresh_from_db()
    repo = Repository.objects.get(pk=imp.repository_id)
    assert (imp.state, imp.phase, imp.percent, imp.message) == (ImportState.DONE, "Done", 100, "")
    assert imp.finished_at and imp.started_at and imp.bytes_received > 0 and imp.objects_total > 0
    assert imp.report["skipped"] == {
        "refs/pull/": 3,
        "refs/remotes/": 1,
        "refs/keep-around/": 1,
        "refs/stash": 1,
    }
    assert imp.report["default_branch"] == "trunk" == repo.default_branch
    assert set(refs_of(repo.disk_path)) == {
        "refs/heads/trunk",
        "refs/heads/dev",
        "refs/tags/v1",
        "refs/tags/v2",
    }
    assert repacks == [repo.pk]
    # Claimed once: a second delivery of the same task changes nothing.
    assert import_runs.run_import(imp.pk, None).state == ImportState.DONE


def test_a_dead_workers_import_is_restarted_a_live_ones_is_left_alone(staff, hosted_source):
    imp = _queued(staff, hosted_source)
    pack_dir = imp.repository.disk_path / "objects" / "pack"
    (pack_dir / "tmp_pack_left_behind").write_bytes(b"x" * 1000)
    scratch = imp.repository.disk_path.parent / f".import-{imp.repository.disk_path.name}-1"
    (scratch / "objects").mkdir(parents=True)
    RepositoryImport.objects.filter(pk=imp.pk).update(
        state=ImportState.RUNNING, heartbeat_at=timezone.now() - timedelta(seconds=30)
    )
    outcome = import_runs.run_import(imp.pk, None)
    assert outcome.state == "busy" and 4 * 60 < outcome.retry_in <= 5 * 60 + 1
    RepositoryImport.objects.filter(pk=imp.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=6))
    assert import_runs.run_import(imp.pk, None).state == ImportState.DONE
    assert not list(pack_dir.glob("tmp_*")) and not scratch.exists()


def test_cancel_of_a_queued_import_removes_the_repository(staff, hosted_source):
    imp = _queued(staff, hosted_source)
    repo_id, path = imp.repository_id, imp.repository.disk_path
    assert path.exists()
    imp = import_requests.import_cancel(imp=imp, actor=staff)
    assert (imp.state, imp.message, imp.repository_id) == (ImportState.CANCELLED, "Cancelled by stan.", None)
    assert not Repository.objects.filter(pk=repo_id).exists() and not path.exists()
    assert import_runs.run_import(imp.pk, None).state == ImportState.CANCELLED  # the task comes later: no-op
    with pytest.raises(Conflict):
        import_requests.import_cancel(imp=imp, actor=staff)


def test_a_running_import_sees_a_cancel_at_its_next_write(staff, hosted_source):
    imp = _queued(staff, hosted_source)
    claimed, _, _ = import_runs._claim(imp.pk)
    tracker = import_runs._Tracker(claimed)
    assert tracker.should_cancel() is False
    import_requests.import_cancel(imp=claimed, actor=staff)
    assert RepositoryImport.objects.get(pk=imp.pk).state == ImportState.RUNNING  # the task ends it
    tracker.written = 0
    assert tracker.should_cancel() is True
    # Another worker taking over makes this one stop without touching the row.
    RepositoryImport.objects.filter(pk=imp.pk).update(started_at=timezone.now(), cancel_requested=False)
    with pytest.raises(import_runs._ClaimLost):
        tracker.write()


def _failed(imp: RepositoryImport, sealed=None) -> RepositoryImport:
    repo_id, path = imp.repository_id, imp.repository.disk_path
    assert import_runs.run_import(imp.pk, sealed).state == ImportState.FAILED
    imp.refresh_from_db()
    assert imp.state == ImportState.FAILED and imp.repository_id is None and imp.finished_at
    assert not Repository.objects.filter(pk=repo_id).exists() and not path.exists()
    return imp


def test_failed_runs_leave_nothing_and_say_why(staff, hosted_source, tmp_path, git_home, settings):
    gone = tmp_path / "gone"
    git(git_home, "init", "--quiet", str(gone))
    imp = _queued(staff, gone, name="gone")
    subprocess.run(["rm", "-rf", str(gone)], check=True)
    assert "neither a URL nor an existing path" in _failed(imp).message

    built = build(CASES["hasDotgit"], tmp_path / "bad", git_home)
    imp = _failed(_queued(staff, tmp_path / "bad", name="bad"))
    assert "hasDotgit" in imp.message and built.bad_oid in imp.message

    sealed_junk = _failed(_queued(staff, hosted_source, name="seal"), "junk")
    assert "credentials could not be opened" in sealed_junk.message

    settings.IMPORT_MAX_REFS = 3
    assert "refs to import" in _failed(_queued(staff, hosted_source, name="many")).message
    settings.IMPORT_MAX_REFS = 1000
    settings.IMPORT_MAX_SIZE = 100
    assert "is larger than the 0 MiB" in _failed(_queued(staff, hosted_source, name="size")).message
    assert not Repository.objects.exists()


# --- pushes, pages and the API -----------------------------------------------------------------


def _basic(user) -> str:
    secret = services.token_create(user=user, scope="write")[1]
    return "Basic " + base64.b64encode(f"{user.username}:{secret}".encode()).decode()


def test_pushes_are_refused_while_importing(staff, hosted_source):
    imp = _queued(staff, hosted_source)
    url = f"/{imp.full_name}.git/info/refs?service=git-receive-pack"
    response = Client().get(url, HTTP_AUTHORIZATION=_basic(staff))
    assert response.status_code == 403 and b"being imported" in response.content
    import_runs.run_import(imp.pk, None)
    assert Client().get(url, HTTP_AUTHORIZATION=_basic(staff)).status_code == 200


def test_new_page_offers_the_import_and_all_refs_to_staff_only(client, staff, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    user = UserFactory(username="nina")
    client.force_login(user)
    page = client.get("/new").content.decode()
    assert 'name="import_url"' in page and 'type="password" name="import_password"' in page
    assert 'name="refs"' not in page
    response = client.post(
        "/new",
        {
            "name": "p",
            "visibility": "public",
            "import_url": "http://127.0.0.1:9/x.git",
            "refs": "all",
            "import_password": SECRET,
        },
    )
    assert response.status_code == 400 and "Only site staff can import all refs." in response.content.decode()
    assert SECRET not in response.content.decode() and not Repository.objects.exists()
    response = client.post("/new", {"name": "p", "visibility": "public", "import_url": "file:///etc/passwd"})
    assert response.status_code == 400 and "can be imported" in response.content.decode()
    assert not Repository.objects.exists()
    client.force_login(staff)
    assert 'name="refs"' in client.get("/new").content.decode()


def test_new_page_import_lands_on_the_repository_page_with_progress(client, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    user = UserFactory(username="nina")
    client.force_login(user)
    response = client.post(
        "/new",
        {
            "name": "p",
            "visibility": "private",
            "import_url": "http://127.0.0.1:9/x.git",
            "import_username": "me",
            "import_password": SECRET,
        },
    )
    assert response.status_code == 302 and response["Location"] == "/nina/p"
    imp = RepositoryImport.objects.get()
    page = client.get("/nina/p").content.decode()
    assert "Import queued" in page and f'data-import-api="/api/v1/imports/{imp.pk}"' in page
    assert "Cancel import" in page and "This repository is empty" not in page and SECRET not in page
    assert "js/import-progress.js" in page


def test_import_pages_are_for_the_requester_admins_and_staff(client, staff, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    owner, admin, reader, other = (UserFactory(username=n) for n in ("olga", "adam", "rita", "otto"))
    imp = import_requests.import_request(requester=owner, name="p", source="http://127.0.0.1:9/x.git")
    Membership.objects.create(repository=imp.repository, user=admin, role=Role.ADMIN)
    Membership.objects.create(repository=imp.repository, user=reader, role=Role.READER)
    url = f"/imports/{imp.pk}"
    assert Client().get(url).status_code == 404
    assert Client().post(url + "/cancel").status_code == 404
    for user, status in [(owner, 200), (admin, 200), (staff, 200), (reader, 404), (other, 404)]:
        client.force_login(user)
        assert client.get(url).status_code == status, user
        assert client.get(f"/api/v1/imports/{imp.pk}").status_code == status, user
    client.force_login(other)
    assert client.post(url + "/cancel").status_code == 404
    assert RepositoryImport.objects.get(pk=imp.pk).state == ImportState.QUEUED
    client.force_login(admin)
    assert client.post(url + "/cancel").status_code == 302
    assert RepositoryImport.objects.get(pk=imp.pk).state == ImportState.CANCELLED
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert "Cancelled." in page and "Cancelled by adam." in page


def test_import_page_escapes_what_the_source_sent(client, staff):
    imp = RepositoryImport.objects.create(
        full_name="stan/x",
        requested_by=staff,
        source_url="https://example.org/x.git",
        state=ImportState.FAILED,
        message="<script>alert(1)</script>",
        report={"source": "s", "heads": 1, "tags": 0, "skipped": {"refs/<img src=x onerror=alert(1)>/": 2}},
    )
    client.force_login(staff)
    page = client.get(f"/imports/{imp.pk}").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "refs/&lt;img src=x onerror=alert(1)&gt;/" in page


def test_api_import_request_watch_and_cancel(client, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    user = UserFactory(username="api-user")
    token = services.token_create(user=user, scope="write")[1]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def post(body, **extra):
        return client.post(
            "/api/v1/repos", json.dumps(body), content_type="application/json", **auth, **extra
        )

    for body, status, code in [
        ({"name": "p", "import_url": "file:///etc"}, 400, "source_refused"),
        ({"name": "p", "import_url": "http://127.0.0.1:9/x.git", "refs": "all"}, 403, "forbidden"),
        ({"name": "p", "refs": "all"}, 400, "invalid"),
        (
            {"name": "p", "import_url": "http://127.0.0.1:9/x.git", "mirror": True, "import_password": "x"},
            400,
            "invalid",
        ),
        ({"name": "p", "import_url": "http://127.0.0.1:9/x.git", "default_branch": "x"}, 400, "invalid"),
    ]:
        response = post(body)
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), body
    assert not Repository.objects.exists()

    response = post(
        {"name": "p", "import_url": f"http://u:{SECRET}@127.0.0.1:9/x.git", "visibility": "private"}
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["full_name"] == "api-user/p" and body["visibility"] == "private"
    assert body["import"]["state"] == "queued" and body["import"]["source_url"] == "http://127.0.0.1:9/x.git"
    assert (
        response["Location"]
        == body["import"]["url"]
        == f"http://testserver/api/v1/imports/{body['import']['id']}"
    )
    assert SECRET not in response.content.decode()
    import_id = body["import"]["id"]
    watched = client.get(f"/api/v1/imports/{import_id}", **auth).json()
    assert watched["progress"]["phase"] == "Waiting for a worker" and watched["repository"] == "api-user/p"
    assert client.get(f"/api/v1/imports/{import_id}").status_code == 404  # anonymous
    reader = services.token_create(user=user, scope="read")[1]
    assert (
        client.post(f"/api/v1/imports/{import_id}/cancel", HTTP_AUTHORIZATION=f"Bearer {reader}").status_code
        == 403
    )
    response = client.post(f"/api/v1/imports/{import_id}/cancel", **auth)
    assert response.status_code == 202 and response.json()["state"] == "cancelled"
    assert response.json()["repository"] is None and not Repository.objects.exists()
    response = client.post(f"/api/v1/imports/{import_id}/cancel", **auth)
    assert response.status_code == 409 and response.json()["error"]["code"] == "import_finished"
