"""The web and API import in-process: the request (checked, stripped of credentials, sealed)
and the run (report, claim, restart, cancel, failures), the task's work called directly."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from repos import sealing, services
from repos.errors import Conflict, Forbidden, InvalidInput
from repos.models import ImportState, Repository, RepositoryImport
from repos.netguard import SourceRefused
from sources import import_requests, import_runs
from tests.factories import UserFactory
from tests.gitutil import git
from tests.objectclasses import CASES, build
from tests.sources.importsupport import SECRET, queued, refs_of, write_hosted_source

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def hosted_source(tmp_path_factory) -> Path:
    return write_hosted_source(tmp_path_factory.mktemp("hosted"))


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
    monkeypatch.setattr("sources.tasks.run_import.apply_async", lambda args, **_: sent.append(tuple(args)))
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


def test_run_imports_reports_and_queues_the_fresh_repack(
    staff, hosted_source, monkeypatch, django_capture_on_commit_callbacks
):
    repacks = []
    monkeypatch.setattr("repos.tasks.repack_fresh.apply_async", lambda args, **_: repacks.append(*args))
    imp = queued(staff, hosted_source)
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
    imp = queued(staff, hosted_source)
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
    imp = queued(staff, hosted_source)
    repo_id, path = imp.repository_id, imp.repository.disk_path
    assert path.exists()
    imp = import_requests.import_cancel(imp=imp, actor=staff)
    assert (imp.state, imp.message, imp.repository_id) == (ImportState.CANCELLED, "Cancelled by stan.", None)
    assert not Repository.objects.filter(pk=repo_id).exists() and not path.exists()
    assert import_runs.run_import(imp.pk, None).state == ImportState.CANCELLED  # the task comes later: no-op
    with pytest.raises(Conflict):
        import_requests.import_cancel(imp=imp, actor=staff)


def test_a_running_import_sees_a_cancel_at_its_next_write(staff, hosted_source):
    imp = queued(staff, hosted_source)
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
    imp = queued(staff, gone, name="gone")
    subprocess.run(["rm", "-rf", str(gone)], check=True)
    assert "neither a URL nor an existing path" in _failed(imp).message

    built = build(CASES["hasDotgit"], tmp_path / "bad", git_home)
    imp = _failed(queued(staff, tmp_path / "bad", name="bad"))
    assert "hasDotgit" in imp.message and built.bad_oid in imp.message

    sealed_junk = _failed(queued(staff, hosted_source, name="seal"), "junk")
    assert "credentials could not be opened" in sealed_junk.message

    settings.IMPORT_MAX_REFS = 3
    assert "refs to import" in _failed(queued(staff, hosted_source, name="many")).message
    settings.IMPORT_MAX_REFS = 1000
    settings.IMPORT_MAX_SIZE = 100
    assert "is larger than the 0 MiB" in _failed(queued(staff, hosted_source, name="size")).message
    assert not Repository.objects.exists()
