"""Pull mirrors in process: the backoff arithmetic, setting a mirror up (and every bad input),
claims, the beat scheduler, a sync from a local path (staff), the settings page, the repository
page, the API, and web merges into a mirror. The HTTP flows are in test_mirrors_live.py."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from repos import lifecycle, mirrors, tasks
from repos import services as repo_services
from repos.errors import Conflict, Forbidden, InvalidInput, ServiceError
from repos.models import Mirror, Push, Role, Visibility
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git, make_history
from tests.live import free_port

pytestmark = pytest.mark.django_db
XSS = "<script>window.pwned=1</script>"


@pytest.fixture
def enqueued(monkeypatch) -> list[tuple[str, tuple]]:
    """Tasks enqueued, as (name, args), instead of sent: no worker runs in these tests."""
    from celery.app.task import Task

    calls: list[tuple[str, tuple]] = []
    monkeypatch.setattr(
        Task,
        "apply_async",
        lambda self, args=None, kwargs=None, **_: calls.append((self.name, tuple(args or ()))),
    )
    return calls


@pytest.fixture
def people():
    olga = UserFactory(username="olga")
    repo = RepositoryFactory(owner=olga, name="proj")
    reader, outsider = UserFactory(username="rita"), UserFactory(username="otto")
    repo_services.membership_set(repo=repo, user=reader, role=Role.READER)
    return {
        "olga": olga,
        "repo": repo,
        "reader": reader,
        "outsider": outsider,
        "staff": UserFactory(username="staff", is_staff=True),
    }


def refs_of(path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- arithmetic and validation ---------------------------------------------------------------------


def test_backoff_doubles_per_failure_up_to_the_cap(settings):
    settings.MIRROR_MAX_BACKOFF = timedelta(hours=24)
    minutes = [mirrors.backoff(10, n) / timedelta(minutes=1) for n in range(10)]
    assert minutes == [10, 20, 40, 80, 160, 320, 640, 1280, 1440, 1440]
    assert mirrors.backoff(10, 10**9) == timedelta(hours=24)  # no overflow, still the cap
    # The cap never makes a mirror sync more often than its interval.
    assert mirrors.backoff(3 * 24 * 60, 1) == timedelta(days=3)


def test_check_interval(settings):
    settings.MIRROR_MIN_INTERVAL_MINUTES, settings.MIRROR_INTERVAL_MINUTES = 5, 60
    assert mirrors.check_interval(None) == 60 and mirrors.check_interval("") == 60
    assert mirrors.check_interval("15") == 15 and mirrors.check_interval(5) == 5
    for bad in ("abc", "-1", -1, 0, 4, True, 1.5, "1e3", "99999999", mirrors.MAX_INTERVAL_MINUTES + 1, [5]):
        with pytest.raises(InvalidInput) as exc:
            mirrors.check_interval(bad)
        assert "interval_minutes" in exc.value.fields


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "ftp://example.org/x.git",
        "file:///etc",
        "/etc",
        "ext::sh -c touch% /tmp/pwned",
        "http://user:secret@127.0.0.1/x.git",
        "http://127.0.0.1/x.git",
        "http://[::1]/x.git",
        "http://169.254.169.254/x",
        "https://exa mple.org/x.git",
        "javascript:alert(1)",
        "http://" + "a" * 3000,
        "http://host:99999/x.git",
        f"http://{XSS}/x.git",
        "ssh://git@127.0.0.1/x.git",
    ],
)
def test_bad_upstreams_are_refused_and_nothing_is_created(people, settings, url):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = False
    with pytest.raises(ServiceError) as exc:
        mirrors.mirror_create(repo=people["repo"], url=url, created_by=people["olga"])
    assert exc.value.fields.get("url") and exc.value.message
    assert "secret" not in exc.value.message
    assert not Mirror.objects.exists()


def test_who_may_set_up_a_mirror_and_when(people, settings, tmp_path, git_home):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    url = f"http://127.0.0.1:{free_port()}/x.git"
    repo = people["repo"]
    for user in (people["reader"], people["outsider"], people["staff"]):
        with pytest.raises(Forbidden):
            mirrors.mirror_create(repo=repo, url=url, created_by=user)
    with pytest.raises(InvalidInput):  # local paths are for staff only
        mirrors.mirror_create(repo=repo, url=str(tmp_path), created_by=people["olga"])
    with pytest.raises(InvalidInput):
        mirrors.mirror_create(repo=repo, url=url, created_by=people["olga"], interval_minutes=1)
    assert not Mirror.objects.exists()
    mirror = mirrors.mirror_create(repo=repo, url=f"  {url}  ", created_by=people["olga"])
    assert (mirror.url, mirror.interval_minutes, mirror.enabled) == (url, 60, True)
    assert abs(mirror.next_sync_at - timezone.now()) < timedelta(seconds=5)
    with pytest.raises(Conflict):
        mirrors.mirror_create(repo=repo, url=url, created_by=people["olga"])
    other = RepositoryFactory(owner=people["olga"], name="other")
    lifecycle.repository_soft_delete(repo=other, acting_user=people["olga"])
    with pytest.raises(Conflict):
        mirrors.mirror_create(repo=other, url=url, created_by=people["olga"])


# --- syncing from a local path (staff) ---------------------------------------------------------------


@pytest.fixture
def local(people, tmp_path, git_home):
    """A staff-made mirror of a local repository whose HEAD is `trunk` and that carries refs a
    mirror must leave out."""
    source = tmp_path / "source"
    shas = make_history(source, git_home)
    git(git_home, "update-ref", "refs/pull/7/head", shas["refs/heads/feature"], cwd=source)
    git(git_home, "update-ref", "refs/remotes/origin/x", shas["refs/heads/trunk"], cwd=source)
    repo_services.membership_set(repo=people["repo"], user=people["staff"], role=Role.ADMIN)
    mirror = mirrors.mirror_create(repo=people["repo"], url=str(source), created_by=people["staff"])
    return {"source": source, "shas": shas, "mirror": mirror, "repo": people["repo"], "env": git_home}


def test_a_local_sync_takes_branches_tags_and_the_upstream_default_branch(local):
    result = mirrors.sync_mirror(local["mirror"])
    assert result.outcome == "synced" and result.objects > 0
    repo = local["repo"]
    refs = refs_of(repo.disk_path)
    assert set(refs) == {"refs/heads/trunk", "refs/heads/feature", "refs/tags/v1.0"}
    assert refs["refs/heads/trunk"] == local["shas"]["refs/heads/trunk"]
    repo.refresh_from_db()
    # The repository's default branch (main) did not exist: the upstream's HEAD is taken.
    assert repo.default_branch == "trunk"
    assert (
        git(local["env"], "--git-dir", str(repo.disk_path), "symbolic-ref", "HEAD").stdout.strip()
        == "refs/heads/trunk"
    )
    push = Push.objects.get(pk=result.push_id)
    assert [u.ref for u in push.ref_updates.all()] == [
        "refs/heads/feature",
        "refs/heads/trunk",
        "refs/tags/v1.0",
    ]
    assert push.commits.count() == 4 and push.protocol == "mirror" and push.pusher is None


def test_claims_busy_stale_paused_and_deleted(local, settings):
    mirror = local["mirror"]
    Mirror.objects.filter(pk=mirror.pk).update(claimed_at=timezone.now())
    assert mirrors.sync_mirror(mirror).outcome == "busy"
    assert refs_of(local["repo"].disk_path) == {}
    # A claim older than MIRROR_STALE_CLAIM belongs to a sync that died: taken over, then released.
    Mirror.objects.filter(pk=mirror.pk).update(
        claimed_at=timezone.now() - settings.MIRROR_STALE_CLAIM - timedelta(minutes=1)
    )
    assert mirrors.sync_mirror(mirror).outcome == "synced"
    assert Mirror.objects.get(pk=mirror.pk).claimed_at is None
    Mirror.objects.filter(pk=mirror.pk).update(enabled=False)
    assert mirrors.sync_mirror(mirror).outcome == "skipped"
    Mirror.objects.filter(pk=mirror.pk).update(enabled=True)
    lifecycle.repository_soft_delete(repo=local["repo"], acting_user=local["repo"].owner)
    assert mirrors.sync_mirror(mirror).outcome == "skipped"
    assert Mirror.objects.get(pk=mirror.pk).claimed_at is None
    assert tasks.sync_mirror(10**9) == "gone"


def test_a_closed_port_fails_keeps_the_refs_and_backs_off(local, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    mirror = local["mirror"]
    assert mirrors.sync_mirror(mirror).outcome == "synced"
    kept = refs_of(local["repo"].disk_path)
    mirrors.mirror_update(
        mirror=mirror, actor=local["repo"].owner, url=f"http://127.0.0.1:{free_port()}/gone.git"
    )
    result = mirrors.sync_mirror(mirror)
    assert result.outcome == "failed" and "Cannot reach 127.0.0.1" in result.error
    mirror.refresh_from_db()
    assert refs_of(local["repo"].disk_path) == kept
    assert mirror.consecutive_failures == 1 and mirror.last_error == result.error
    assert mirror.next_sync_at - timezone.now() > timedelta(minutes=2 * mirror.interval_minutes - 1)


# --- the scheduler -------------------------------------------------------------------------------------


def test_beat_enqueues_due_mirrors_only_and_once(people, enqueued, settings):
    now = timezone.now()
    owner = people["olga"]

    def mirror(name, **fields):
        repo = RepositoryFactory(owner=owner, name=name)
        return Mirror.objects.create(
            repository=repo,
            url="https://example.org/x.git",
            interval_minutes=30,
            **{"next_sync_at": now - timedelta(minutes=1), **fields},
        )

    due = mirror("due")
    stale = mirror("stale", claimed_at=now - settings.MIRROR_STALE_CLAIM - timedelta(minutes=1))
    mirror("later", next_sync_at=now + timedelta(minutes=5))
    mirror("never", next_sync_at=None)
    mirror("paused", enabled=False)
    mirror("syncing", claimed_at=now - timedelta(minutes=3))
    gone = mirror("gone")
    lifecycle.repository_soft_delete(repo=gone.repository, acting_user=owner)

    assert tasks.schedule_mirror_syncs() == 2
    assert sorted(enqueued) == sorted(
        [("repos.tasks.sync_mirror", (due.pk,)), ("repos.tasks.sync_mirror", (stale.pk,))]
    )
    # Taken for this run: the next beat does not enqueue them again while they wait in the queue.
    assert tasks.schedule_mirror_syncs() == 0 and len(enqueued) == 2
    due.refresh_from_db()
    assert timedelta(minutes=29) < due.next_sync_at - now <= timedelta(minutes=31)


# --- pages ---------------------------------------------------------------------------------------------


def test_the_settings_page_is_404_to_all_but_admins(people):
    repo = people["repo"]
    mirror_url = "/olga/proj/settings/mirror"
    for visibility in (Visibility.PUBLIC, Visibility.PRIVATE):
        repo_services.repository_update(repo=repo, visibility=visibility)
        for client in (
            Client(),
            signed_in(people["reader"]),
            signed_in(people["outsider"]),
            signed_in(people["staff"]),
        ):
            assert client.get(mirror_url).status_code == 404
            assert (
                client.post(mirror_url, {"action": "create", "url": "http://127.0.0.1/x"}).status_code == 404
            )
            assert client.post(f"{mirror_url}/sync").status_code == 404
        assert signed_in(people["olga"]).get(mirror_url).status_code == 200
    assert not Mirror.objects.exists()


def test_an_admin_sets_up_changes_pauses_and_stops_a_mirror_on_the_page(
    people, settings, enqueued, django_capture_on_commit_callbacks
):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    settings.MIRROR_MIN_INTERVAL_MINUTES = 5
    olga = signed_in(people["olga"])
    page = "/olga/proj/settings/mirror"
    for bad in (
        {"url": "file:///etc/passwd"},
        {"url": XSS},
        {"url": "http://127.0.0.1/x.git", "interval_minutes": "2"},
        {"url": "http://127.0.0.1/x.git", "interval_minutes": XSS},
        {"url": "x" * 5000},
    ):
        response = olga.post(page, {"action": "create", **bad})
        assert response.status_code == 400
        assert XSS not in response.content.decode()
    assert olga.post(page, {"action": "bogus"}).status_code == 400
    assert not Mirror.objects.exists() and not enqueued

    upstream = f"http://127.0.0.1:{free_port()}/up.git"
    with django_capture_on_commit_callbacks(execute=True):
        response = olga.post(page, {"action": "create", "url": upstream, "interval_minutes": "15"})
    assert response.status_code == 302
    mirror = Mirror.objects.get()
    assert (mirror.url, mirror.interval_minutes, mirror.created_by) == (upstream, 15, people["olga"])
    assert enqueued == [("repos.tasks.sync_mirror", (mirror.pk,))]
    assert f"Mirror of <code>{upstream}</code>" in olga.get(page).content.decode()

    assert olga.post(page, {"action": "update", "url": upstream, "interval_minutes": "45"}).status_code == 302
    mirror.refresh_from_db()
    assert mirror.interval_minutes == 45
    assert olga.post(page, {"action": "pause"}).status_code == 302
    assert Mirror.objects.get().enabled is False
    assert "Resume mirroring" in olga.get(page).content.decode()
    assert olga.post(page, {"action": "sync"}).status_code == 400  # paused: nothing to sync
    assert olga.post(page, {"action": "resume"}).status_code == 302
    assert Mirror.objects.get().enabled is True
    assert olga.post(page, {"action": "delete"}).status_code == 302
    assert not Mirror.objects.exists()
    assert refs_of(people["repo"].disk_path) == {}


def test_the_repository_page_shows_the_mirror_and_escapes_its_error(people):
    repo = people["repo"]
    now = timezone.now()
    Mirror.objects.create(
        repository=repo,
        url="https://example.org/up.git",
        created_by=people["olga"],
        last_success_at=now - timedelta(hours=2),
        next_sync_at=now + timedelta(minutes=20),
        consecutive_failures=3,
        last_error=f"Fetching failed: {XSS}",
    )
    admin_page = signed_in(people["olga"]).get("/olga/proj").content.decode()
    assert "Mirror of <code>https://example.org/up.git</code>" in admin_page
    assert "last synced 2" in admin_page and "next sync in 1" in admin_page
    assert "Sync failing since the last good sync 2" in admin_page and "(3 attempts)" in admin_page
    assert XSS not in admin_page and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in admin_page
    assert "/olga/proj/settings/mirror/sync" in admin_page
    settings_page = signed_in(people["olga"]).get("/olga/proj/settings/mirror").content.decode()
    assert "3 failed attempts in a row" in settings_page and "Sync now" in settings_page
    assert XSS not in settings_page and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in settings_page
    reader_page = signed_in(people["reader"]).get("/olga/proj").content.decode()
    assert "Mirror of" in reader_page and "Sync failing" in reader_page
    assert "/settings/mirror/sync" not in reader_page


# --- API -----------------------------------------------------------------------------------------------


def api(user=None, scope="write") -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(
            HTTP_AUTHORIZATION=f"Bearer {repo_services.token_create(user=user, scope=scope)[1]}"
        )
    return client


def test_the_mirror_api(people, settings, enqueued, django_capture_on_commit_callbacks):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    path = "/api/v1/repos/olga/proj/mirror"
    upstream = f"http://127.0.0.1:{free_port()}/up.git"
    admin = api(people["olga"])
    assert admin.get(path).json()["error"]["code"] == "not_a_mirror"
    assert admin.post(f"{path}/sync").status_code == 404
    for body in (
        {},
        {"url": "ftp://x/y"},
        {"url": "http://u:p@127.0.0.1/x.git"},
        {"url": upstream, "interval_minutes": 0},
        {"url": upstream, "interval_minutes": "x"},
        {"url": upstream, "enabled": "maybe"},
        {"url": ["a"]},
        {"url": "/etc"},
        {"url": upstream, "interval_minutes": 2},
    ):
        response = admin.put(path, body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert "error" in response.json() and "p@" not in response.content.decode()
    assert not Mirror.objects.exists()
    assert api(people["reader"]).put(path, {"url": upstream}, format="json").status_code == 403
    assert api(people["olga"], scope="read").put(path, {"url": upstream}, format="json").status_code == 403
    assert APIClient().put(path, {"url": upstream}, format="json").status_code == 401

    with django_capture_on_commit_callbacks(execute=True):
        created = admin.put(path, {"url": upstream, "interval_minutes": 20}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["url"], body["interval_minutes"], body["enabled"], body["created_by"]) == (
        upstream,
        20,
        True,
        "olga",
    )
    assert body["failing"] is False and body["syncing"] is False and body["last_error"] == ""
    mirror = Mirror.objects.get()
    assert enqueued == [("repos.tasks.sync_mirror", (mirror.pk,))]
    assert api(people["reader"]).get(path).json()["url"] == upstream
    assert APIClient().get(path).status_code == 200  # public repository: anyone may read

    updated = admin.put(path, {"interval_minutes": 90, "enabled": False}, format="json").json()
    assert (updated["interval_minutes"], updated["enabled"]) == (90, False)
    response = admin.post(f"{path}/sync")
    assert response.status_code == 409 and response.json()["error"]["code"] == "paused"
    admin.put(path, {"enabled": True}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        assert admin.post(f"{path}/sync").status_code == 202
    assert len(enqueued) == 2
    assert api(people["reader"]).post(f"{path}/sync").status_code == 403
    assert api(people["reader"]).delete(path).status_code == 403

    repo_services.repository_update(repo=people["repo"], visibility=Visibility.PRIVATE)
    # Anonymous writes are 401 before any lookup, so they tell nothing of the repository either.
    for client, write in ((APIClient(), 401), (api(people["outsider"]), 404)):
        assert client.get(path).status_code == 404
        for method in ("put", "delete"):
            assert getattr(client, method)(path, {"url": upstream}, format="json").status_code == write
        assert client.post(f"{path}/sync").status_code == write
    assert admin.delete(path).status_code == 204 and not Mirror.objects.exists()
    assert admin.delete(path).status_code == 404


# --- web merges -----------------------------------------------------------------------------------------


def test_a_web_merge_into_a_mirror_is_refused_with_the_reason(tmp_path, git_home):
    from reviews import merge
    from reviews import services as review_services
    from tests.reviews.conftest import Scene

    scene = Scene(tmp_path, git_home)
    scene.checkout("feature", "main")
    scene.commit("feature", {"b.txt": "bee\n"})
    scene.publish("feature", "refs/users/alice/feature")
    proposal = review_services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Add b",
    )
    Mirror.objects.create(repository=scene.repo, url="https://example.org/up.git")
    main = scene.tip("refs/heads/main")
    for user in (scene.maint, scene.owner):
        with pytest.raises(Forbidden) as exc:
            merge.proposal_merge(proposal=proposal, user=user, strategy="ff")
        assert "mirrors an upstream" in exc.value.message and "only through the mirror" in exc.value.message
    assert scene.tip("refs/heads/main") == main
    assert not Push.objects.filter(repository=scene.repo, protocol="web").exists()


def test_pruning_follows_the_checked_listing_and_never_a_moved_ref(tmp_path):
    """What the upstream no longer lists is deleted, compare-and-delete; an upstream that
    emptied after the listing deletes nothing, since the listing still had its branches."""
    from repos.git import GitError, run_git
    from repos.mirror_sync import _prune, canonical_refs

    repo = RepositoryFactory()
    path = repo.disk_path
    tree = run_git(["mktree"], repo=path, input=b"").text.strip()
    commit = run_git(["commit-tree", tree, "-m", "x"], repo=path).text.strip()
    other = run_git(["commit-tree", tree, "-p", commit, "-m", "y"], repo=path).text.strip()
    for ref in ("refs/heads/main", "refs/heads/gone", "refs/tags/v1"):
        run_git(["update-ref", ref, commit], repo=path)
    _prune(path, canonical_refs(path), {"refs/heads/main", "refs/tags/v1"})
    assert canonical_refs(path) == {"refs/heads/main": commit, "refs/tags/v1": commit}
    stale = canonical_refs(path)
    run_git(["update-ref", "refs/tags/v1", other], repo=path)  # moved after it was read
    with pytest.raises(GitError):
        _prune(path, stale, {"refs/heads/main"})
    assert canonical_refs(path) == {"refs/heads/main": commit, "refs/tags/v1": other}
