"""Pull mirrors in process: the backoff arithmetic, setting a mirror up (and every bad input),
claims, the beat scheduler, a sync from a local path (staff), and web merges into a mirror.
The settings page, the repository page and the API are in test_mirrors_pages.py, the HTTP
flows in test_mirrors_live.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from repos import lifecycle
from repos import services as repo_services
from repos.errors import Conflict, Forbidden, InvalidInput, ServiceError
from repos.models import Mirror, Push, Role
from sources import mirrors, tasks
from tests.factories import RepositoryFactory
from tests.gitutil import git, make_history
from tests.live import free_port
from tests.repos.test_locking import holding, process_env
from tests.sources.mirrorsupport import XSS, capture_enqueued, make_people, refs_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def enqueued(monkeypatch) -> list[tuple[str, tuple]]:
    return capture_enqueued(monkeypatch)


@pytest.fixture
def people() -> dict:
    return make_people()


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


def test_claims_busy_dead_paused_and_deleted(local, settings, tmp_path):
    mirror = local["mirror"]
    settings.VAR_DIR = tmp_path
    code = f"from repos import locking; held = locking.claim('mirror', {mirror.repository_id})"
    with holding(process_env(tmp_path), code):
        assert mirrors.sync_mirror(mirror).outcome == "busy"
    assert refs_of(local["repo"].disk_path) == {}
    # The holder was killed: its claim went with it, and the record it left does not stop a sync.
    Mirror.objects.filter(pk=mirror.pk).update(claimed_at=timezone.now())
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
    from gitcore.git import GitError, run_git
    from sources.mirror_sync import _prune, canonical_refs

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
