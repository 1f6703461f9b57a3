"""The build service, in-process, on real repositories."""

from __future__ import annotations

import os
import subprocess
from unittest import mock

import pytest
import zstandard

from bundles import build, locking, packing, services
from bundles.models import BuildState, Bundle, BundleBuild, BundleLock, BundleState, Flavor, Kind
from bundles.storage import file_digest
from repos.models import Push, RefUpdate
from tests.bundles.conftest import add_commits, refs_of
from tests.eager import run_followers
from tests.factories import RepositoryFactory
from tests.gitutil import git
from tests.repos.test_locking import holding, process_env

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo(git_home, tmp_path):
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 3, tag="v1")
    # A workspace ref, which no bundle may carry.
    head = git(git_home, "--git-dir", str(repo.disk_path), "rev-parse", "main").stdout.strip()
    git(git_home, "--git-dir", str(repo.disk_path), "update-ref", "refs/users/zoe/topic", head)
    return repo


def published(repo, flavor=Flavor.STANDARD):
    return list(
        Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED, flavor=flavor).order_by(
            "creation_token"
        )
    )


def anchored(refs: dict[str, str]) -> dict[str, str]:
    """refs plus the bundle-tags/ branch a bundle lists for each tag (all annotated here)."""
    return refs | {
        packing.TAG_ANCHORS + ref.removeprefix("refs/tags/"): oid
        for ref, oid in refs.items()
        if ref.startswith("refs/tags/")
    }


def unbundle_chain(env, tmp_path, rows, store) -> dict[str, str]:
    """Apply bundles in order to a fresh repository, as a client does; its refs afterwards."""
    target = tmp_path / "client.git"
    git(env, "init", "--bare", "--quiet", str(target))
    listed = {}
    for row in rows:
        path = store / row.storage_key
        if row.flavor == Flavor.ZSTD:
            plain = tmp_path / f"{row.pk}.bundle"
            packing.decompress_zstd(path, plain)
            path = plain
        out = git(env, "--git-dir", str(target), "bundle", "unbundle", str(path)).stdout
        listed.update(dict(reversed(line.split(" ", 1)) for line in out.splitlines()))
    for ref, oid in listed.items():
        # A branch may not point at a tag object: clients keep these under refs/bundles/.
        local = (
            "refs/bundles/" + ref.removeprefix("refs/heads/") if ref.startswith(packing.TAG_ANCHORS) else ref
        )
        git(env, "--git-dir", str(target), "update-ref", local, oid)
    git(env, "--git-dir", str(target), "fsck", "--no-progress")
    return listed


def test_base_bundle_has_canonical_refs_only_in_both_flavors(repo, bundle_store, git_home, tmp_path):
    result = services.bundles_build(repo=repo)
    assert result.status == "built" and result.outcome.kind == Kind.BASE
    (standard,) = published(repo)
    (zstd,) = published(repo, Flavor.ZSTD)
    canonical = refs_of(git_home, repo.disk_path, "refs/heads", "refs/tags")
    assert standard.tips == zstd.tips == canonical
    assert not any(ref.startswith("refs/users/") for ref in standard.tips)
    assert standard.commit_count == 3 and standard.prerequisites == []
    for row in (standard, zstd):
        assert (row.size, row.sha256) == tuple(file_digest(bundle_store / row.storage_key).__dict__.values())
        assert row.storage_key.startswith(f"public/{row.sha256}")  # a public repository
    assert zstd.storage_key.endswith(".zst.bundle")
    with open(bundle_store / zstd.storage_key, "rb") as fh:
        raw = zstandard.ZstdDecompressor().stream_reader(fh).read(16)
    assert raw == packing.BUNDLE_SIGNATURE
    assert (bundle_store / standard.storage_key).read_bytes().startswith(packing.BUNDLE_SIGNATURE)
    # The annotated tag is listed as a branch under bundle-tags/ too, so clients keep a ref to
    # it (packing.TAG_ANCHORS); the tips recorded are the canonical refs.
    unbundled = unbundle_chain(git_home, tmp_path, [zstd], bundle_store)
    assert unbundled == canonical | {"refs/heads/bundle-tags/v1": canonical["refs/tags/v1"]}
    assert BundleBuild.objects.get(repository=repo).state == BuildState.SUCCEEDED
    assert not locking.is_claimed(repo.pk)
    # Nothing changed: nothing to build.
    assert services.bundles_build(repo=repo).status == "skipped"


def test_incrementals_then_collapse(repo, bundle_store, git_home, tmp_path, settings):
    settings.BUNDLE_COLLAPSE_COUNT = 2
    settings.BUNDLE_COLLAPSE_FRACTION = 100.0
    services.bundles_build(repo=repo)
    work = tmp_path / "work"
    add_commits(repo.disk_path, work, git_home, 2)
    first = services.bundles_build(repo=repo).outcome
    assert first.kind == Kind.INCREMENTAL
    add_commits(repo.disk_path, work, git_home, 1, branch="next", tag="v2")
    second = services.bundles_build(repo=repo).outcome
    assert second.kind == Kind.INCREMENTAL and second.creation_token > first.creation_token

    rows = published(repo)
    assert [r.kind for r in rows] == [Kind.BASE, Kind.INCREMENTAL, Kind.INCREMENTAL]
    assert rows[1].commit_count == 2 and rows[1].prerequisites and set(rows[1].tips) == {"refs/heads/main"}
    assert set(rows[2].tips) == {"refs/heads/next", "refs/tags/v2"}
    canonical = refs_of(git_home, repo.disk_path, "refs/heads", "refs/tags")
    assert unbundle_chain(git_home, tmp_path / "std", rows, bundle_store) == anchored(canonical)
    assert unbundle_chain(git_home, tmp_path / "zst", published(repo, Flavor.ZSTD), bundle_store) == anchored(
        canonical
    )

    # A third incremental would exceed BUNDLE_COLLAPSE_COUNT: a new base replaces them all.
    add_commits(repo.disk_path, work, git_home, 1)
    assert services.bundles_build(repo=repo).outcome.kind == Kind.BASE
    rows = published(repo)
    assert [r.kind for r in rows] == [Kind.BASE] and rows[0].commit_count == 7
    assert Bundle.objects.filter(repository=repo, state=BundleState.DELETED).count() == 6
    # Superseded objects stay for the grace period, then go.
    old = Bundle.objects.filter(repository=repo, state=BundleState.DELETED).first()
    assert (bundle_store / old.storage_key).exists()
    settings.BUNDLE_DELETE_GRACE = build.timezone.timedelta(0)
    assert build.prune(build.get_storage(), repo=repo) == 6
    assert not (bundle_store / old.storage_key).exists()
    assert (bundle_store / rows[0].storage_key).exists()


def test_collapse_on_size_fraction(repo, bundle_store, git_home, tmp_path, settings):
    settings.BUNDLE_COLLAPSE_FRACTION = 0.01
    services.bundles_build(repo=repo)
    add_commits(repo.disk_path, tmp_path / "work", git_home, 1)
    assert services.bundles_build(repo=repo).outcome.kind == Kind.INCREMENTAL
    add_commits(repo.disk_path, tmp_path / "work", git_home, 1)
    assert services.bundles_build(repo=repo).outcome.kind == Kind.BASE


def test_failure_mid_build_lists_nothing_and_releases_the_lock(repo, bundle_store):
    def boom():
        raise RuntimeError("injected: worker died")

    build.FAILPOINTS["before-publish"] = boom
    with pytest.raises(RuntimeError, match="injected"):
        services.bundles_build(repo=repo)
    assert published(repo) == [] and published(repo, Flavor.ZSTD) == []
    assert Bundle.objects.filter(repository=repo, state=BundleState.BUILDING).count() == 2
    run = BundleBuild.objects.get(repository=repo)
    assert run.state == BuildState.FAILED and "injected" in run.error
    assert not locking.is_claimed(repo.pk)

    build.FAILPOINTS.clear()
    assert services.bundles_build(repo=repo).status == "built"
    assert len(published(repo)) == 1 and len(published(repo, Flavor.ZSTD)) == 1
    assert not Bundle.objects.filter(repository=repo, state=BundleState.BUILDING).exists()


def test_dead_holder_is_taken_over_and_live_one_is_not(repo, bundle_store, settings):
    # A record naming a process that is gone, with the lock free: its build died.
    dead = subprocess.Popen(["true"])
    dead.wait()
    BundleLock.objects.create(
        repository=repo, claimed_at=build.timezone.now(), claimed_by=f"{os.uname().nodename}:{dead.pid}:x"
    )
    BundleBuild.objects.create(repository=repo, state=BuildState.RUNNING)
    assert services.bundles_build(repo=repo).status == "built"
    assert BundleBuild.objects.filter(repository=repo, state=BuildState.FAILED).count() == 1

    # The lock decides, not the record: a record without the lock claims nothing, and a
    # process holding the lock keeps it whatever the record says.
    BundleLock.objects.filter(pk=repo.pk).update(
        claimed_at=build.timezone.now(), claimed_by=f"{os.uname().nodename}:{os.getppid()}:y"
    )
    assert services.bundles_build(repo=repo).status == "skipped"
    code = f"from repos import locking\nheld = locking.claim('bundles', {repo.pk})\nassert held"
    with holding(process_env(settings.VAR_DIR), code):
        assert locking.is_claimed(repo.pk)
        assert services.bundles_build(repo=repo).status == "busy"


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_damaged_object_is_dropped_and_rebuilt(repo, bundle_store, git_home, tmp_path, damage):
    services.bundles_build(repo=repo)
    add_commits(repo.disk_path, tmp_path / "work", git_home, 1)
    services.bundles_build(repo=repo)
    base, inc = published(repo, Flavor.ZSTD)
    path = bundle_store / inc.storage_key
    if damage == "missing":
        path.unlink()
    else:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    result = services.bundles_build(repo=repo, deep_audit=True)
    assert result.outcome.kind == Kind.INCREMENTAL and "dropping" in result.detail
    rows = published(repo, Flavor.ZSTD)
    assert rows[0].pk == base.pk and rows[1].pk != inc.pk
    assert Bundle.objects.get(pk=inc.pk).state == BundleState.DELETED
    canonical = refs_of(git_home, repo.disk_path, "refs/heads", "refs/tags")
    assert unbundle_chain(git_home, tmp_path, rows, bundle_store) == anchored(canonical)


def test_empty_repository_builds_nothing(bundle_store):
    repo = RepositoryFactory()
    assert services.bundles_build(repo=repo).status == "skipped"
    assert not Bundle.objects.filter(repository=repo).exists()


def test_later_build_covers_an_earlier_request(repo, bundle_store):
    requested = build.timezone.now()
    services.bundles_build(repo=repo)
    result = services.bundles_build(repo=repo, requested_at=requested)
    assert result.status == "skipped" and "covers" in result.detail


def test_receiver_enqueues_only_for_canonical_refs(
    repo, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from repos.signals import push_recorded

    run_followers(monkeypatch)  # the receiver's task runs here; the build it queues is mocked
    settings.BUNDLE_DEBOUNCE_SECONDS = 7
    workspace_push = Push.objects.create(repository=repo, pusher_name="zoe", touches_workspace=True)
    RefUpdate.objects.create(push=workspace_push, ref="refs/users/zoe/x", old="0" * 40, new="1" * 40)
    branch_push = Push.objects.create(repository=repo, pusher_name="zoe")
    RefUpdate.objects.create(push=branch_push, ref="refs/heads/main", old="0" * 40, new="1" * 40)
    with mock.patch("bundles.tasks.build_bundles.apply_async") as enqueue:
        with django_capture_on_commit_callbacks(execute=True):
            push_recorded.send(sender=Push, push_id=workspace_push.pk, repository_id=repo.pk)
        assert not enqueue.called
        with django_capture_on_commit_callbacks(execute=True):
            push_recorded.send(sender=Push, push_id=branch_push.pk, repository_id=repo.pk)
    (args,), kwargs = enqueue.call_args
    assert args[0] == repo.pk and kwargs == {"countdown": 7}


def test_scratch_dirs_of_dead_builds_go_and_others_stay(settings, tmp_path):
    """A build makes its scratch directory under the repository's claim: one left over by the
    same repository and database is a killed build's."""
    from bundles.storage import scratch_dir

    settings.VAR_DIR = tmp_path
    killed = scratch_dir(7)
    other_repository = scratch_dir(17)
    other_database = tmp_path / "tmp" / "bundle-7-0123456789ab-left"
    other_database.mkdir()
    new = scratch_dir(7)
    assert new.exists() and other_repository.exists() and other_database.exists()
    assert not killed.exists()


def test_zstd_flavor_holds_a_pack_without_zlib_even_with_a_bitmap(tmp_path, git_home):
    """Maintenance leaves a bitmap; the uncompressed pack must still be written afresh, or
    zstd compresses zlib data and gains nothing (bench/bundles.py found 0.95x)."""
    import zstandard

    from bundles.packing import BundleSpec, write_bundle
    from gitcore.git import run_git

    src = tmp_path / "src.git"
    run_git(["init", "--quiet", "--bare", str(src)])
    add_commits(src, tmp_path / "work", git_home, 40)
    run_git(["repack", "-a", "-d", "-b"], repo=src)
    assert list((src / "objects" / "pack").glob("*.bitmap"))
    head = run_git(["rev-parse", "refs/heads/main"], repo=src).text.strip()
    spec = BundleSpec(refs={"refs/heads/main": head}, exclude=[], prerequisites=[])
    standard, raw = tmp_path / "s.bundle", tmp_path / "u.bundle"
    write_bundle(src, standard, spec, uncompressed=False)
    write_bundle(src, raw, spec, uncompressed=True)
    # zlib-compressed objects do not compress again; stored (level 0) ones do.
    assert raw.stat().st_size > standard.stat().st_size * 1.2
    compressed = len(zstandard.ZstdCompressor(level=3).compress(raw.read_bytes()))
    assert compressed < standard.stat().st_size


def test_tag_anchors_only_for_annotated_tags_and_never_over_a_real_branch(repo, git_home):
    path = repo.disk_path
    refs = packing.canonical_refs(path)
    git(git_home, "--git-dir", str(path), "tag", "light", refs["refs/heads/main"])
    refs = packing.canonical_refs(path)
    listed = packing.header_refs(path, refs)
    assert listed == refs | {"refs/heads/bundle-tags/v1": refs["refs/tags/v1"]}  # not the lightweight tag
    git(git_home, "--git-dir", str(path), "branch", "bundle-tags", "main")
    refs = packing.canonical_refs(path)
    assert packing.header_refs(path, refs) == refs
