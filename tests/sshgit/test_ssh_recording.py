"""The same pushes over smart HTTP (to owner/project) and over SSH (to its twin owner/twin) are
recorded alike: Push, RefUpdate and PushCommit rows equal but for ids, times and the protocol,
and the tasks that follow a push (workspaces' rows) do the same."""

from __future__ import annotations

import io
import zipfile

import pytest

from repos import services
from repos.models import Push, PushCommit
from reviews.models import Proposal
from tests.sshgit.sshsupport import adopt, git, git_bytes
from tests.support.wait import wait_until
from workspaces.models import Workspace

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def _record(repo, after: int) -> list[tuple]:
    rows = []
    for push in Push.objects.filter(repository=repo, pk__gt=after).order_by("pk"):
        updates = [(u.ref, u.old, u.new, u.forced) for u in push.ref_updates.order_by("pk")]
        commits = list(
            PushCommit.objects.filter(push=push).order_by("position").values_list("sha", flat=True)
        )
        rows.append(
            (push.pusher_id, push.pusher_name, push.touches_workspace, push.push_options, updates, commits)
        )
    return rows


def _proposals(repo) -> list[tuple]:
    return sorted(
        (p.number, p.author_id, p.source_ref, p.target_branch, p.title, p.state)
        for p in Proposal.objects.filter(repository=repo)
    )


def _workspaces(repo) -> list[tuple]:
    return sorted(
        (w.user_id, w.frozen, w.hidden, w.taken_down, w.last_push_at is not None)
        for w in Workspace.objects.filter(repository=repo)
    )


def test_the_same_pushes_are_recorded_alike(world, ssh_git, git_home, celery_worker_process):
    twin = services.repository_create(owner=world.owner.user, name="twin")
    owner = adopt(ssh_git, world.host, git_home, world.owner.user)
    assert (
        git(owner.env, "push", owner.http_url(twin.full_name), "main", cwd=world.owner.work).returncode == 0
    )
    alice_http = world.add("alice")
    alice = adopt(ssh_git, world.host, git_home, alice_http.user)
    seeded = Push.objects.order_by("pk").last().pk

    def both(person, work, *args):
        for url in (person.http_url(world.repo.full_name), person.ssh_url(twin.full_name)):
            result = git(person.env, "push", url, *args, cwd=work)
            assert result.returncode == 0, (url, result.stderr)

    def on(pusher, message, name):
        return pusher.commit(message, name=name)

    on(world.owner, "a feature", "feature.txt")
    both(owner, world.owner.work, "HEAD:refs/heads/feature")  # a new branch
    on(world.owner, "more", "feature.txt")
    both(owner, world.owner.work, "HEAD:main")  # a fast-forward (and the branch stays behind)
    both(owner, world.owner.work, "+HEAD~1:refs/heads/feature", "HEAD:refs/tags/v1")  # two refs, one push
    on(alice_http, "alice's topic", "alice.txt")
    both(alice, alice_http.work, "HEAD:refs/users/alice/topic")  # a workspace push
    on(alice_http, "alice's proposal", "alice.txt")
    # A nameless push, with a topic and a title (which opens a proposal).
    both(alice, alice_http.work, "-o", "topic=fix", "-o", "title=Fix it", "HEAD:refs/for/main")
    on(alice_http, "a branch push", "alice.txt")
    both(alice, alice_http.work, "HEAD:refs/heads/my-fix")  # lands in her workspace

    http_rows, ssh_rows = _record(world.repo, seeded), _record(twin, seeded)
    assert len(http_rows) == 6
    assert ssh_rows == http_rows
    assert set(
        Push.objects.filter(repository=world.repo, pk__gt=seeded).values_list("protocol", flat=True)
    ) == {"http"}
    assert set(Push.objects.filter(repository=twin, pk__gt=seeded).values_list("protocol", flat=True)) == {
        "ssh"
    }
    refs = [u[0] for row in ssh_rows for u in row[4]]
    assert "refs/users/alice/fix" in refs and "refs/users/alice/my-fix" in refs, refs

    # The work that follows a push (a task per push): alice's workspace row, in both.
    def settled():
        here, there = _workspaces(world.repo), _workspaces(twin)
        return here if here and here == there and all(row[-1] for row in here) else None

    rows = wait_until(
        settled,
        timeout=60,
        what=lambda: f"the workspace rows of both: {_workspaces(world.repo)} {_workspaces(twin)}",
        alive=celery_worker_process,
    )
    assert [row[0] for row in rows] == [alice.user.pk]
    opened = wait_until(
        lambda: (here := _proposals(world.repo)) and here == _proposals(twin) and here,
        timeout=30,
        what=lambda: f"the proposals of both: {_proposals(world.repo)} {_proposals(twin)}",
    )
    assert [(p[2], p[4]) for p in opened] == [("refs/users/alice/fix", "Fix it")]


# git's other ways of pushing and fetching, over SSH: each as over HTTP.


@pytest.fixture
def alice(world, ssh_git, git_home):
    pusher = world.add("alice")
    pusher.ssh = adopt(ssh_git, world.host, git_home, pusher.user)
    return pusher


def test_up_to_date_dry_run_delete_and_force_pushes(world, alice):
    url = alice.ssh.ssh_url(world.repo.full_name)
    alice.git("remote", "set-url", "origin", url, check=True)
    first = alice.commit("one")
    pushed = git(alice.ssh.env, "push", "origin", "HEAD:refs/users/alice/x", cwd=alice.work)
    assert pushed.returncode == 0, pushed.stderr
    before = Push.objects.count()
    last = Push.objects.order_by("pk").last().pk
    for args in (("HEAD:refs/users/alice/x",), ("--dry-run", "HEAD:refs/users/alice/y")):
        again = git(alice.ssh.env, "push", "origin", *args, cwd=alice.work)
        assert again.returncode == 0, again.stderr
        assert "hostsite" not in again.stderr, again.stderr
    assert (
        "Everything up-to-date"
        in git(alice.ssh.env, "push", "origin", "HEAD:refs/users/alice/x", cwd=alice.work).stderr
    )
    assert Push.objects.count() == before
    assert "refs/users/alice/y" not in world.refs()
    # A rewrite needs --force, as over HTTP; then a delete-only push (no pack follows).
    alice.git("commit", "--quiet", "--amend", "-m", "one, again", check=True)
    refused = git(alice.ssh.env, "push", "origin", "HEAD:refs/users/alice/x", cwd=alice.work)
    assert refused.returncode != 0 and "non-fast-forward" in refused.stderr + refused.stdout, refused.stderr
    forced = git(alice.ssh.env, "push", "--force", "origin", "HEAD:refs/users/alice/x", cwd=alice.work)
    assert forced.returncode == 0, forced.stderr
    assert world.refs()["refs/users/alice/x"] != first
    deleted = git(alice.ssh.env, "push", "origin", ":refs/users/alice/x", cwd=alice.work)
    assert deleted.returncode == 0, deleted.stderr
    assert "refs/users/alice/x" not in world.refs()
    updates = [(u.ref, u.forced) for p in Push.objects.filter(pk__gt=last) for u in p.ref_updates.all()]
    assert updates == [("refs/users/alice/x", True), ("refs/users/alice/x", False)]
    assert set(Push.objects.filter(pk__gt=last).values_list("protocol", flat=True)) == {"ssh"}


def test_atomic_push_over_ssh(world, alice):
    url = alice.ssh.ssh_url(world.repo.full_name)
    alice.commit("atomic")
    # A tag is refused for a contributor: atomic, nothing of the push lands.
    result = git(
        alice.ssh.env, "push", "--atomic", url, "HEAD:refs/users/alice/a", "HEAD:refs/tags/t", cwd=alice.work
    )
    assert result.returncode != 0
    refs = world.refs()
    assert "refs/users/alice/a" not in refs and "refs/tags/t" not in refs
    result = git(
        alice.ssh.env, "push", "--atomic", url, "HEAD:refs/users/alice/a", "HEAD:my-fix", cwd=alice.work
    )
    assert result.returncode == 0, result.stderr
    refs = world.refs()
    assert "refs/users/alice/a" in refs and "refs/users/alice/my-fix" in refs


@pytest.mark.parametrize("version", ["0", "2"])
def test_shallow_partial_and_incremental_fetches(world, alice, version, tmp_path):
    owner = world.owner
    for i in range(30):
        owner.commit(f"history {i}", name=f"h{i % 3}.txt")
    assert owner.push("HEAD:main").returncode == 0
    url = alice.ssh.ssh_url(world.repo.full_name)
    env = alice.ssh.env
    proto = ("-c", f"protocol.version={version}")
    shallow = tmp_path / "shallow"
    result = git(env, *proto, "clone", "--quiet", "--depth", "1", url, str(shallow))
    assert result.returncode == 0, result.stderr
    assert git(env, "rev-list", "--count", "HEAD", cwd=shallow).stdout.strip() == "1"
    deepened = git(env, *proto, "fetch", "--quiet", "--deepen", "5", cwd=shallow)
    assert deepened.returncode == 0, deepened.stderr
    assert git(env, "rev-list", "--count", "HEAD", cwd=shallow).stdout.strip() == "6"
    # A partial clone fetches blobs by id as the checkout needs them: protocol v0 serves no
    # unadvertised object (uploadpack.allowAnySHA1InWant is off), over HTTP as over SSH.
    partial = {}
    for transport in ("http", "ssh"):
        where = tmp_path / f"partial-{transport}"
        result = git(
            env,
            *proto,
            "clone",
            "--quiet",
            "--filter=blob:none",
            alice.ssh.url(transport, world.repo.full_name),
            str(where),
        )
        partial[transport] = (result.returncode == 0, (where / "h0.txt").exists())
    assert partial["ssh"] == partial["http"] == ((True, True) if version == "2" else (False, False)), partial
    # Incremental: alice has 40 commits of her own the server never saw; the owner pushes more.
    for i in range(40):
        alice.commit(f"mine {i}", name="mine.txt")
    for i in range(5):
        owner.commit(f"later {i}")
    assert owner.push("HEAD:main").returncode == 0
    fetched = git(env, *proto, "fetch", "--quiet", url, "main", cwd=alice.work)
    assert fetched.returncode == 0, fetched.stderr
    assert (
        git(env, "rev-parse", "FETCH_HEAD", cwd=alice.work).stdout.strip() == world.refs()["refs/heads/main"]
    )


def _zip_files(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}


def test_archive_options_give_what_git_archive_gives(world, alice, tmp_path):
    owner = world.owner
    second = owner.commit("second", name="dir/nested.txt")
    assert owner.push("HEAD:main", "HEAD:refs/tags/v1").returncode == 0
    url = alice.ssh.ssh_url(world.repo.full_name)
    cases = [
        (["--format=zip"], "main", []),
        (["--format=tgz", "--prefix=p/"], "v1", []),
        (["--format=tar"], "HEAD", []),  # as git's own documentation writes it
        (["--format=tar.gz"], "main~1", []),
        (["--format=tar"], "HEAD^", []),
        (["--format=zip"], "v1:dir", []),
        (["--format=zip", "-9"], second[:10], ["dir"]),
        (["--format=tar"], world.base_sha, ["file.txt"]),
    ]
    for options, treeish, paths in cases:
        remote = git_bytes(alice.ssh.env, "archive", f"--remote={url}", *options, treeish, *paths)
        assert remote.returncode == 0, (options, treeish, remote.stderr)
        local = git_bytes(
            alice.ssh.env, "--git-dir", str(world.repo.disk_path), "archive", *options, treeish, *paths
        )
        if ":" in treeish:  # a tree has no commit time: git stamps it with the current time
            assert _zip_files(remote.stdout) == _zip_files(local.stdout) == {"nested.txt": b"second\n"}
        else:
            assert remote.stdout == local.stdout, (options, treeish)
    # What the server does not take is refused in git's terms, one line, nothing served.
    for options, treeish in (
        (["--format=tar", "--worktree-attributes"], "main"),
        (["--format=tar"], "nothere"),
    ):
        refused = git_bytes(alice.ssh.env, "archive", f"--remote={url}", *options, treeish)
        assert refused.returncode != 0 and refused.stdout == b""
        lines = refused.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fatal: git archive: NACK "), lines
