"""Web and API imports end to end: sources served by the live server (gunicorn), imports run
by a real Celery worker through the real broker, watched over HTTP.

The big source (a module-scoped history of some thousands of commits written with fast-import)
is served to each test by a repository whose object store borrows the source's
(`objects/info/alternates`) and whose refs are the source's, host internals included
(`refs/pull/*`, `refs/remotes/*`, `refs/keep-around/*`): no copy per test.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from repos import services
from repos.models import ImportState, Mirror, Repository, RepositoryImport
from tests import live
from tests.factories import UserFactory
from tests.gitutil import git
from tests.objectclasses import CASES, build
from tests.sources.importlive import (
    Api,
    finished,
    left_nothing,
    refs_of,
    serve,
    signed_in,
    source_env,
    write_big_source,
)
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
COMMITS = 15_000


@pytest.fixture(scope="module")
def big_source(tmp_path_factory) -> Path:
    return write_big_source(tmp_path_factory.mktemp("big"), COMMITS)


def test_import_over_http_with_live_progress_and_a_report(
    celery_worker_process, live_server_url, big_source, tmp_path
):
    serve(big_source, "upstream", "big")
    ivan = UserFactory(username="ivan")
    api, web = Api(live_server_url, ivan), signed_in(live_server_url, ivan)
    status, body, headers = api.call(
        "POST", "/api/v1/repos", {"name": "copy", "import_url": f"{live_server_url}/upstream/big.git"}
    )
    assert status == 202, body
    import_id = body["import"]["id"]
    assert headers["Location"] == f"{live_server_url}/api/v1/imports/{import_id}"

    snapshots, page = [], None

    def watch() -> RepositoryImport | None:
        """The finished import; until then, a snapshot of the row and, once, the page."""
        nonlocal page
        imp = RepositoryImport.objects.get(pk=import_id)
        if not imp.active:
            return imp
        snapshots.append((imp.state, imp.phase, imp.objects_done, imp.bytes_received, imp.heartbeat_at))
        if page is None and imp.state == ImportState.RUNNING:
            page = web.request("GET", "/ivan/copy")[1]
        return None

    imp = wait_until(
        watch,
        timeout=180,
        what=lambda: f"the import to finish; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )
    assert imp.state == ImportState.DONE, (imp.message, celery_worker_process.log())

    running = {s[1:4] for s in snapshots if s[0] == ImportState.RUNNING}
    assert len(running) >= 3, snapshots  # the row moved while git ran
    assert {"Receiving objects", "Resolving deltas"} & {s[1] for s in snapshots}
    assert len({s[4] for s in snapshots if s[0] == ImportState.RUNNING}) >= 2  # heartbeats
    assert page is not None and "Importing from" in page
    assert f'data-import-api="/api/v1/imports/{import_id}"' in page
    assert "This repository is empty" not in page and "Cancel import" in page

    repo = Repository.objects.get(pk=imp.repository_id)
    project = refs_of(big_source, "refs/heads", "refs/tags")
    assert refs_of(repo.disk_path) == project and len(project) == 2 + COMMITS // 1000
    assert imp.report["skipped"] == {"refs/pull/": 30, "refs/remotes/": 2, "refs/keep-around/": 3}
    assert (imp.report["heads"], imp.report["tags"], repo.default_branch) == (2, COMMITS // 1000, "main")
    status, watched, _ = api.call("GET", f"/api/v1/imports/{import_id}")
    assert status == 200 and watched["state"] == "done" and watched["report"]["skipped"]["refs/pull/"] == 30
    page = web.request("GET", f"/imports/{import_id}")[1]
    assert "Skipped 30 refs under refs/pull/." in page
    advertised = git(source_env(tmp_path / "home"), "ls-remote", f"{live_server_url}/ivan/copy.git").stdout
    assert "refs/pull/" not in advertised and "refs/heads/main" in advertised
    # The fresh delta search was queued after success and the worker ran it.
    wait_until(
        lambda: Repository.objects.get(pk=repo.pk).fresh_packed_at,
        timeout=120,
        what=lambda: f"the fresh repack; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )


def test_a_private_source_credentials_are_used_once_and_never_stored(
    celery_worker_process, live_web, live_server_url, tmp_path, git_home
):
    small = tmp_path / "small"
    git(git_home, "init", "--quiet", "-b", "main", str(small))
    git(git_home, "commit", "--quiet", "--allow-empty", "-m", "private history", cwd=small)
    source = serve(small, "keeper", "secret", private=True)
    secret = services.token_create(user=source.owner, scope="read")[1]
    api = Api(live_server_url, UserFactory(username="importer"))
    url = f"{live_server_url}/keeper/secret.git"
    requests = {
        "ok": {"import_username": "keeper", "import_password": secret},
        "nocreds": {},
        "wrong": {"import_username": "keeper", "import_password": "hst_wrong"},
    }
    ids = {}
    for name, creds in requests.items():
        status, body, _ = api.call("POST", "/api/v1/repos", {"name": name, "import_url": url, **creds})
        assert status == 202, body
        assert secret not in json.dumps(body)
        ids[name] = (body["import"]["id"], body["id"])
    done = {
        name: wait_until(
            lambda i=i: finished(i),
            timeout=120,
            what=lambda name=name: f"import {name} to finish; worker log:\n{celery_worker_process.log()}",
            alive=celery_worker_process,
        )
        for name, (i, _) in ids.items()
    }
    assert done["ok"].state == ImportState.DONE, done["ok"].message
    assert refs_of(Repository.objects.get(name="ok").disk_path) == refs_of(small / ".git", "refs/heads")
    assert (done["nocreds"].state, done["nocreds"].message) == (
        ImportState.FAILED,
        "The source needs credentials.",
    )
    assert (done["wrong"].state, done["wrong"].message) == (
        ImportState.FAILED,
        "The source refused the credentials.",
    )
    for name in ("nocreds", "wrong"):
        left_nothing(done[name], ids[name][1])

    dump = io.StringIO()
    call_command("dumpdata", stdout=dump)
    assert secret not in dump.getvalue()
    assert secret not in celery_worker_process.log(limit=None)
    assert secret not in live_web.log_path.read_text(errors="replace")


def test_cancel_from_the_repository_page_removes_everything(
    celery_worker_process, live_server_url, big_source
):
    serve(big_source, "upstream", "big")
    vera = UserFactory(username="vera")
    web = signed_in(live_server_url, vera)
    status, page, _ = web.request(
        "POST",
        "/new",
        {"name": "halfway", "visibility": "public", "import_url": f"{live_server_url}/upstream/big.git"},
    )
    assert status == 200 and "Importing vera/halfway from" in page  # landed on the repository page
    imp = RepositoryImport.objects.get(full_name="vera/halfway")
    repo_id = imp.repository_id
    wait_until(
        lambda: RepositoryImport.objects.get(pk=imp.pk).state == ImportState.RUNNING,
        timeout=120,
        what=lambda: f"the import to run; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )
    status, page, _ = web.request("POST", f"/imports/{imp.pk}/cancel", {})
    assert status == 200 and ("Cancelling" in page or "Cancelled." in page)
    imp = wait_until(
        lambda: finished(imp.pk),
        timeout=120,
        what=lambda: f"the cancelled import to finish; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )
    assert (imp.state, imp.message) == (ImportState.CANCELLED, "Cancelled by vera.")
    left_nothing(imp, repo_id)
    status, page, _ = web.request("GET", f"/imports/{imp.pk}")
    assert status == 200 and "Cancelled." in page and "Nothing was kept." in page
    assert web.request("GET", "/vera/halfway")[0] == 404


@pytest.fixture
def capped_worker(live_env, _isolated_storage, tmp_path):
    """A worker whose imports may bring 1 MiB and 40 refs at most."""
    live.empty_queues(_isolated_storage["queue"])
    (tmp_path / "logs").mkdir()
    caps = {"IMPORT_MAX_SIZE_MB": "1", "IMPORT_MAX_REFS": "40"}
    worker = live.start_worker({**live_env, **caps}, tmp_path / "logs", queue=_isolated_storage["queue"])
    yield worker
    worker.stop()


def test_caps_and_bad_sources_leave_nothing_and_say_why(
    capped_worker, live_server_url, big_source, tmp_path, git_home
):
    serve(big_source, "upstream", "big")
    tags = tmp_path / "tags"
    git(git_home, "init", "--quiet", "-b", "main", str(tags))
    git(git_home, "commit", "--quiet", "--allow-empty", "-m", "tagged", cwd=tags)
    for i in range(45):
        git(git_home, "tag", f"t{i}", cwd=tags)
    serve(tags, "upstream2", "tags")
    build(CASES["hasDotgit"], tmp_path / "bad", git_home)
    serve(tmp_path / "bad", "upstream3", "bad")
    api = Api(live_server_url, UserFactory(username="capped"))
    cases = {
        "big": (f"{live_server_url}/upstream/big.git", "is larger than the 1 MiB an import may bring"),
        "tags": (
            f"{live_server_url}/upstream2/tags.git",
            "has 46 refs to import; an import may bring at most 40",
        ),
        "bad": (f"{live_server_url}/upstream3/bad.git", "refused by the hasDotgit check"),
        "missing": (f"{live_server_url}/no/such/place.git", "(HTTP 404)"),
        "closed": (f"http://127.0.0.1:{live.free_port()}/x.git", "Cannot reach 127.0.0.1"),
    }
    ids = {}
    for name, (url, _) in cases.items():
        status, body, _ = api.call("POST", "/api/v1/repos", {"name": name, "import_url": url})
        assert status == 202, body
        ids[name] = (body["import"]["id"], body["id"])
    for name, (import_id, repo_id) in ids.items():
        imp = wait_until(
            lambda i=import_id: finished(i),
            timeout=180,
            what=lambda name=name: f"import {name} to finish; worker log:\n{capped_worker.log()}",
            alive=capped_worker,
        )
        assert imp.state == ImportState.FAILED and cases[name][1] in imp.message, (name, imp.message)
        left_nothing(imp, repo_id)
        status, body, _ = api.call("GET", f"/api/v1/imports/{import_id}")
        assert status == 200 and body["state"] == "failed" and body["repository"] is None
    assert not Repository.objects.filter(owner__username="capped").exists()


def test_all_refs_is_for_staff_kept_hidden_and_a_mirror_can_follow(
    celery_worker_process, live_server_url, big_source, tmp_path
):
    serve(big_source, "upstream", "big")
    url = f"{live_server_url}/upstream/big.git"
    user = Api(live_server_url, UserFactory(username="plain"))
    status, body, _ = user.call("POST", "/api/v1/repos", {"name": "all", "import_url": url, "refs": "all"})
    assert status == 403 and body["error"]["code"] == "forbidden"
    assert not Repository.objects.filter(owner__username="plain").exists()

    staff = Api(live_server_url, UserFactory(username="sysop", is_staff=True))
    status, body, _ = staff.call(
        "POST", "/api/v1/repos", {"name": "all", "import_url": url, "refs": "all", "mirror": True}
    )
    assert status == 202, body
    imp = wait_until(
        lambda: finished(body["import"]["id"]),
        timeout=180,
        what=lambda: f"the all-refs import to finish; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )
    assert imp.state == ImportState.DONE, imp.message
    repo = Repository.objects.get(pk=imp.repository_id)
    imported = refs_of(repo.disk_path, "refs/imported")
    assert len(imported) == 30 + 2 + 3 and "refs/imported/pull/7/head" in imported
    assert imp.report["imported"] == {"refs/pull/": 30, "refs/remotes/": 2, "refs/keep-around/": 3}
    env = source_env(tmp_path / "home")
    for version in ("0", "2"):
        for remote in (
            f"{live_server_url}/sysop/all.git",
            f"http://sysop:{staff.token}@{live_server_url.removeprefix('http://')}/sysop/all.git",
        ):
            result = git(env, "-c", f"protocol.version={version}", "ls-remote", remote, check=False)
            assert result.returncode == 0, result.stderr
            out = result.stdout
            assert "refs/heads/main" in out and "refs/imported/" not in out
    mirror = Mirror.objects.filter(repository=repo).first()
    assert mirror is not None and mirror.url == url and imp.message == ""
