"""Maintenance re-deltas a history that arrived badly packed, once, and again only when the pack
drifts far from fresh; a normal repack keeps whatever deltas (or none) arrived."""

from __future__ import annotations

import random
import subprocess

import pytest

from gitcore.git import run_git
from repos.maintenance import maintain_repository, pack_stats, repack_fresh
from repos.models import Repository
from tests.factories import RepositoryFactory

pytestmark = pytest.mark.django_db


def fast_import_history(path, env, *, commits: int, start: int = 0, parent: str | None = None) -> None:
    """`commits` commits editing a few lines of 20 text files each: delta-friendly history of
    files that zlib alone compresses poorly (random words), as source code is."""
    rng = random.Random(7)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(3000)]
    lines = [" ".join(rng.choices(words, k=10)) + "\n" for i in range(200)]
    out = []
    for k in range(commits):
        n = start + k
        message = f"commit {n}\n".encode()
        out.append(
            f"commit refs/heads/main\nmark :{k + 1}\n"
            f"author A <a@example.invalid> {1_600_000_000 + n} +0000\n"
            f"committer A <a@example.invalid> {1_600_000_000 + n} +0000\ndata {len(message)}\n".encode()
            + message
        )
        if k == 0 and parent:
            out.append(f"from {parent}\n".encode())
        for f in range(20):
            lines[(n * 7 + f) % 200] = (
                f"edited in commit {n} for file {f} " + " ".join(rng.choices(words, k=8)) + "\n"
            )
            data = "".join(lines[f * 10 :] + lines[: f * 10]).encode()
            out.append(f"M 100644 inline f{f}.txt\ndata {len(data)}\n".encode() + data + b"\n")
        out.append(b"\n")
    subprocess.run(
        ["git", "-C", str(path), "fast-import", "--quiet"], input=b"".join(out), env=env, check=True
    )


@pytest.fixture
def badly_packed_source(tmp_path, git_home):
    source = tmp_path / "source.git"
    subprocess.run(["git", "init", "--bare", "-q", "-b", "main", str(source)], env=git_home, check=True)
    fast_import_history(source, git_home, commits=120)
    subprocess.run(
        ["git", "-C", str(source), "repack", "-a", "-d", "-f", "-q", "--window=0"], env=git_home, check=True
    )
    return source


def fetch_all(repo, source) -> None:
    run_git(["fetch", "-q", str(source), "+refs/heads/*:refs/heads/*"], repo=repo.disk_path)


def test_maintenance_gives_a_badly_packed_history_one_fresh_delta_search(badly_packed_source, git_home):
    repo = RepositoryFactory()
    fetch_all(repo, badly_packed_source)
    run_git(["repack", "-a", "-d", "-q"], repo=repo.disk_path)
    objects, before = pack_stats(repo.disk_path)
    assert objects >= 1000

    assert maintain_repository(repo).ran
    repo.refresh_from_db()
    objects_after, after = pack_stats(repo.disk_path)
    assert objects_after == objects
    assert after < before / 3, (before, after)
    assert repo.fresh_packed_at is not None
    assert repo.fresh_bytes_per_object == pytest.approx(after / objects)
    run_git(["fsck", "--no-progress"], repo=repo.disk_path)

    # Fresh already: the next maintenance is the usual repack, which keeps the deltas.
    first_fresh = repo.fresh_packed_at
    Repository.objects.filter(pk=repo.pk).update(pushes_since_maintenance=1)
    repo.refresh_from_db()
    assert maintain_repository(repo).ran
    repo.refresh_from_db()
    assert repo.fresh_packed_at == first_fresh
    assert pack_stats(repo.disk_path)[1] <= after * 1.05


def test_a_badly_packed_arrival_makes_maintenance_re_delta(badly_packed_source, git_home, tmp_path):
    repo = RepositoryFactory()
    fetch_all(repo, badly_packed_source)
    repack_fresh(repo)
    repo.refresh_from_db()
    baseline = repo.fresh_packed_at
    # A mirror of a host that never deltas: many more objects arrive without deltas, and a
    # normal repack keeps them that way.
    tip = run_git(["rev-parse", "refs/heads/main"], repo=repo.disk_path).text.strip()
    more = tmp_path / "more.git"
    subprocess.run(
        ["git", "clone", "-q", "--bare", "--no-local", str(badly_packed_source), str(more)],
        env=git_home,
        check=True,
    )
    fast_import_history(more, git_home, commits=150, start=120, parent=tip)
    subprocess.run(
        ["git", "-C", str(more), "repack", "-a", "-d", "-f", "-q", "--window=0"], env=git_home, check=True
    )
    fetch_all(repo, more)
    run_git(["repack", "-a", "-d", "-q"], repo=repo.disk_path)
    objects, bloated = pack_stats(repo.disk_path)
    assert bloated / objects > repo.fresh_bytes_per_object * 1.5

    assert maintain_repository(repo).ran
    repo.refresh_from_db()
    assert repo.fresh_packed_at > baseline
    assert pack_stats(repo.disk_path)[1] < bloated / 3


def test_small_repositories_are_not_re_deltaed():
    repo = RepositoryFactory()
    assert maintain_repository(repo).ran
    repo.refresh_from_db()
    assert repo.fresh_packed_at is None
