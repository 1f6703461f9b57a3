"""A primary and two replicas, each its own gunicorn and Celery worker with its own REPO_ROOT,
sharing PostgreSQL and Redis: real pushes, real clones, real take-downs and purges."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from gitcore import pktline
from replication.models import ChangeConfirmation, ReplicaState
from replication.models import Node as NodeRow
from repos import services
from repos.models import ChangeKind, Repository, RepositoryChange
from tests.replication.cluster import (
    Cluster,
    commit,
    git,
    git_env,
    primary_web_with,
    require_shared_backends,
    running_cluster,
    served_by,
    work_tree,
)
from tests.repos.livepush import Account, client_env
from tests.support.wait import wait_until
from tests.workspaces.rawgit import normalized

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def running(live_env, tmp_path_factory, django_db_blocker):
    with django_db_blocker.unblock():
        require_shared_backends(live_env)
    # Generous lag for anonymous reads: a test that wants a replica to forward makes it lag on purpose.
    with running_cluster(live_env, tmp_path_factory.mktemp("cluster"), REPLICA_MAX_LAG_SECONDS="60") as c:
        yield c
    # Their heartbeats registered the nodes again after the last test's flush: rows of nodes
    # that are gone would look live to the next module's tests for NODE_DOWN_SECONDS.
    with django_db_blocker.unblock():
        NodeRow.objects.filter(name__in=[node.name for node in c.nodes]).delete()


@pytest.fixture
def cluster(running: Cluster) -> Iterator[Cluster]:
    running.wait_live()
    yield running
    running.settle()


@pytest.fixture
def project(tmp_path):
    alice = Account("alice")
    repo = services.repository_create(owner=alice.user, name="proj")
    env = client_env(tmp_path / "home")
    path = work_tree(tmp_path, env)
    return alice, repo, env, path


def test_a_push_is_cloned_from_every_replica_with_identical_refs(cluster: Cluster, project, tmp_path):
    alice, repo, env, path = project
    commit(path, env, "README", "hello\n")
    git("push", "-q", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
    commit(path, env, "topic.txt", "unmerged work\n")
    git("push", "-q", alice.url(cluster.primary.host, repo), "HEAD:refs/users/alice/topic", cwd=path, env=env)
    primary_refs = cluster.wait_converged(repo)
    assert "refs/users/alice/topic" in primary_refs
    for node in cluster.replicas:
        fsck = git("fsck", "--strict", "--no-dangling", cwd=node.repo_path(repo), env=git_env(), check=False)
        assert fsck.returncode == 0, fsck.stderr
        # Served by the replica itself, not forwarded: it holds the current generation.
        assert served_by(f"{node.url}/{repo.full_name}.git/info/refs?service=git-upload-pack") == node.name
        clone = tmp_path / f"clone-{node.name}"
        git("clone", "-q", f"{node.url}/{repo.full_name}.git", str(clone), env=env)
        assert git("rev-parse", "HEAD", cwd=clone, env=env).stdout.strip() == primary_refs["refs/heads/main"]


def test_a_push_sent_to_a_replica_lands_on_the_primary(cluster: Cluster, project):
    alice, repo, env, path = project
    tip = commit(path, env, "a.txt", "from a replica\n")
    replica = cluster.replicas[0]
    # git follows the 307 to the primary and asks its credential helper for the primary's host:
    # credentials written into the replica's URL are not sent to another host.
    store = path.parent / "credentials"
    store.write_text(
        "".join(f"http://alice:{alice.token}@{node.host}\n" for node in (replica, cluster.primary))
    )
    git("config", "credential.helper", f"store --file={store}", cwd=path, env=env)
    out = git("push", f"{replica.url}/{repo.full_name}.git", "main", cwd=path, env=env)
    assert "main -> main" in out.stderr
    assert cluster.primary.refs(repo)["refs/heads/main"] == tip
    push = (
        RepositoryChange.objects.filter(repository=repo, kind=ChangeKind.PUSH).select_related("push").last()
    )
    assert push is not None and push.push is not None and push.push.pusher_name == "alice"
    assert cluster.wait_converged(repo)["refs/heads/main"] == tip
    # git was told to go to the primary: without following redirects the push is refused.
    commit(path, env, "b.txt", "again\n")
    refused = git(
        "-c",
        "http.followRedirects=false",
        "push",
        alice.url(replica.host, repo),
        "main",
        cwd=path,
        env=env,
        check=False,
    )
    assert refused.returncode != 0


def test_read_your_writes_on_a_lagging_replica(cluster: Cluster, project, tmp_path):
    alice, repo, env, path = project
    first = commit(path, env, "one.txt", "1\n")
    git("push", "-q", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
    lagging = cluster.replicas[0]
    cluster.wait_replicated(repo)
    lagging.stop_worker()
    try:
        second = commit(path, env, "two.txt", "2\n")
        git("push", "-q", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
        assert lagging.refs(repo)["refs/heads/main"] == first  # it really lags
        # The pusher reads through the lagging replica and sees the push (forwarded to the primary).
        # git sends credentials only when asked (a 401), which a public repository never does:
        # a pusher who wants to read their writes sends them up front (docs/operations.md).
        seen = git(
            "-c",
            f"http.extraHeader=Authorization: {alice.basic}",
            "ls-remote",
            f"{lagging.url}/{repo.full_name}.git",
            "refs/heads/main",
            env=env,
        ).stdout.split()[0]
        assert seen == second
        info = f"{lagging.url}/{repo.full_name}.git/info/refs?service=git-upload-pack"
        assert served_by(info, {"Authorization": alice.basic}) == cluster.primary.name
        # An anonymous reader within REPLICA_MAX_LAG_SECONDS is served the replica's copy.
        anonymous = git("ls-remote", f"{lagging.url}/{repo.full_name}.git", "refs/heads/main", env=env)
        assert anonymous.stdout.split()[0] == first
        assert served_by(info) == lagging.name
    finally:
        lagging.start_worker()
    cluster.wait_replicated(repo)  # back, it catches up
    assert lagging.refs(repo)["refs/heads/main"] == second


def test_take_down_and_purge_reach_both_replicas(cluster: Cluster, project):
    from workspaces import moderation

    alice, repo, env, path = project
    commit(path, env, "README", "base\n")
    git("push", "-q", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
    secret = commit(path, env, "secret.txt", "a leaked credential\n")
    blob = git("rev-parse", "HEAD:secret.txt", cwd=path, env=env).stdout.strip()
    mallory = Account("mallory")
    git(
        "push",
        "-q",
        mallory.url(cluster.primary.host, repo),
        "HEAD:refs/users/mallory/leak",
        cwd=path,
        env=env,
    )
    cluster.wait_replicated(repo)
    assert all(node.has_object(repo, blob) for node in cluster.replicas)
    staff = Account("staffer", is_staff=True).user

    moderation.do_take_down_workspace(repo=repo, user=mallory.user, acting_user=staff, reason="leak")
    cluster.wait_replicated(repo)
    takedown = RepositoryChange.objects.get(repository=repo, kind=ChangeKind.TAKEDOWN)
    for node in cluster.replicas:
        refs = node.refs(repo)
        assert "refs/users/mallory/leak" not in refs
        assert refs["refs/takedown/mallory/leak"] == secret
    wait_until(
        lambda: RepositoryChange.objects.get(pk=takedown.pk).completed_at is not None,
        timeout=30,
        what="the take-down confirmed by both replicas",
    )
    main = git("rev-parse", "main", cwd=path, env=env).stdout.strip()
    for node in cluster.replicas:
        _fetches_tell_nothing_of(node, repo, main, hidden=(secret, blob))

    moderation.do_purge_workspace(repo=repo, user=mallory.user, acting_user=staff, reason="leak")
    cluster.wait_replicated(repo)
    purge = RepositoryChange.objects.get(repository=repo, kind=ChangeKind.PURGE)
    wait_until(
        lambda: RepositoryChange.objects.get(pk=purge.pk).completed_at is not None,
        timeout=30,
        what="the purge confirmed by both replicas",
    )
    confirmed = set(ChangeConfirmation.objects.filter(change=purge).values_list("node__name", flat=True))
    assert confirmed == {node.name for node in cluster.replicas}
    assert not cluster.primary.has_object(repo, blob)
    for node in cluster.replicas:
        assert not node.has_object(repo, blob), f"{node.name} still holds the purged blob"
        assert not any("mallory" in ref for ref in node.refs(repo))


def _upload_pack(node, repo, *lines: str) -> tuple[int, list[bytes], str]:
    """A protocol v2 request written by hand to the replica itself (it holds the current
    generation): status, the answer's lines, and which node answered."""
    body = (
        pktline.encode(lines[0])
        + pktline.DELIM
        + b"".join(pktline.encode(x) for x in lines[1:])
        + pktline.FLUSH
    )
    request = urllib.request.Request(
        f"{node.url}/{repo.full_name}.git/git-upload-pack",
        data=body,
        headers={"Content-Type": "application/x-git-upload-pack-request", "Git-Protocol": "version=2"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, normalized(response.read()), response.headers["X-Hostsite-Node"]
    except urllib.error.HTTPError as exc:
        return exc.code, normalized(exc.read()), exc.headers["X-Hostsite-Node"]


def _fetches_tell_nothing_of(node, repo, main: str, *, hidden: tuple[str, ...]) -> None:
    """On a replica, as on the primary: padded ids are refused, and a taken-down id gets the
    answer an unknown one gets as a want, a have and in object-info."""
    unknown = "d1e5" * 10
    status, answer, served = _upload_pack(
        node, repo, "command=fetch\n", f"want {hidden[0]}{'0' * 24}\n", "done\n"
    )
    assert (status, served) == (400, node.name) and b"object id" in b"".join(answer), answer
    for oid in hidden:
        for lines in (
            ("command=fetch\n", "want {}\n", "done\n"),
            ("command=fetch\n", f"want {main}\n", "have {}\n"),
            ("command=object-info\n", "size\n", "oid {}\n"),
        ):
            got = _upload_pack(node, repo, *(line.format(oid) for line in lines))
            expected = _upload_pack(node, repo, *(line.format(unknown) for line in lines))
            swapped = [part.replace(unknown.encode(), oid.encode()) for part in expected[1]]
            assert got == (expected[0], swapped, node.name), (node.name, lines, got, expected)


def test_200_pushes_across_20_repositories_converge(cluster: Cluster, tmp_path):
    alice = Account("alice")
    env = client_env(tmp_path / "home")
    repos = [services.repository_create(owner=alice.user, name=f"many-{i}") for i in range(20)]
    trees = [work_tree(tmp_path, env, f"w{i}") for i in range(20)]
    errors: list[str] = []

    def pusher(indexes):
        for round_ in range(10):
            for i in indexes:
                commit(trees[i], env, f"f{round_}.txt", f"{i} {round_}\n")
                ref = "main" if round_ % 3 else f"main:refs/users/alice/r{round_}"
                result = git(
                    "push",
                    "-q",
                    alice.url(cluster.primary.host, repos[i]),
                    ref,
                    cwd=trees[i],
                    env=env,
                    check=False,
                )
                if result.returncode:
                    errors.append(result.stderr)

    # Two pushers at once: the suite's other tests share these two cores.
    threads = [threading.Thread(target=pusher, args=(range(k, 20, 2),)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for repo in repos:
        refs = cluster.wait_converged(repo, timeout=120)
        # Four workspace refs each, merged into main, so cleanup may have archived them already.
        assert len([ref for ref in refs if ref.startswith(("refs/users/", "refs/archive/"))]) == 4
        assert len(cluster.primary.refs(repo)) == len(refs)


def test_a_replica_killed_mid_fetch_resumes_with_no_partial_refs(cluster: Cluster, project):
    import os

    alice, repo, env, path = project
    commit(path, env, "small.txt", "small\n")
    git("push", "-q", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
    cluster.wait_replicated(repo)
    victim = cluster.replicas[1]
    before = victim.refs(repo)
    # 40 MB that does not compress: the fetch takes long enough to be killed in the middle.
    big = commit(path, env, "big.bin", os.urandom(40 * 1024 * 1024))
    git("push", "-q", alice.url(cluster.primary.host, repo), "main", "main:refs/heads/big", cwd=path, env=env)
    fetching = wait_until(
        lambda: _git_fetch_under(victim), timeout=30, what="a fetch running under the replica's worker"
    )
    assert fetching
    victim.kill_worker()
    assert victim.refs(repo) == before  # nothing half-done is visible
    victim.start_worker()
    cluster.wait_replicated(repo, nodes=[victim], timeout=90)
    refs = victim.refs(repo)
    assert refs["refs/heads/main"] == big and refs["refs/heads/big"] == big
    fsck = git("fsck", "--no-dangling", cwd=victim.repo_path(repo), env=git_env(), check=False)
    assert fsck.returncode == 0, fsck.stderr


def test_with_the_primary_down_replicas_serve_reads_and_refuse_writes(cluster: Cluster, project, tmp_path):
    alice, repo, env, path = project
    tip = commit(path, env, "README", "still here\n")
    git("push", "-q", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
    cluster.wait_replicated(repo)
    cluster.primary.stop_web()
    try:
        replica = cluster.replicas[0]
        clone = tmp_path / "clone-during-outage"
        git("clone", "-q", alice.url(replica.host, repo), str(clone), env=env)
        assert git("rev-parse", "HEAD", cwd=clone, env=env).stdout.strip() == tip
        commit(path, env, "later.txt", "later\n")
        refused = git("push", alice.url(replica.host, repo), "main", cwd=path, env=env, check=False)
        assert refused.returncode != 0
        assert "read-only: the primary is unavailable" in refused.stderr
        request = urllib.request.Request(
            f"{replica.url}/api/v1/repos/{repo.full_name}",
            method="PATCH",
            data=b'{"description": "x"}',
            headers={"Authorization": f"Token {alice.token}", "Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused_api:
            urllib.request.urlopen(request, timeout=30)
        assert refused_api.value.code == 503
        assert int(refused_api.value.headers["Retry-After"]) > 0
        assert Repository.objects.get(pk=repo.pk).description == ""
    finally:
        cluster.primary.start_web()


def _git_fetch_under(node) -> bool:
    """Whether a git fetch (or its index-pack) runs in the node's repositories: git is run with
    `--git-dir <path>` under the node's REPO_ROOT."""
    from pathlib import Path

    root = str(node.repo_root).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if root in cmdline and (b"\0fetch\0" in cmdline or b"index-pack" in cmdline):
            return True
    return False


# --- REPLICATION_MIN_ACKS: the primary's web server restarted with it --------------------------


@pytest.fixture
def min_acks(cluster: Cluster):
    with primary_web_with(cluster, REPLICATION_MIN_ACKS="2", REPLICATION_ACK_TIMEOUT_SECONDS="3"):
        yield cluster


def held(repo) -> dict[str, int]:
    return dict(ReplicaState.objects.filter(repository_id=repo.pk).values_list("node__name", "generation"))


def test_min_acks_a_push_returns_once_both_replicas_hold_it(min_acks: Cluster, tmp_path):
    cluster = min_acks
    alice = Account("alice")
    repo = services.repository_create(owner=alice.user, name="acked")
    env = client_env(tmp_path / "home")
    path = work_tree(tmp_path, env)
    for n in range(3):
        tip = commit(path, env, f"f{n}.txt", f"{n}\n")
        out = git("push", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
        assert "only" not in out.stderr, out.stderr
        # No waiting here: the acknowledgement itself came after both replicas fetched.
        # The push's own change (follow-up work such as maintenance may have added more).
        generation = (
            RepositoryChange.objects.filter(repository=repo, kind=ChangeKind.PUSH)
            .order_by("-generation")
            .first()
        ).generation
        states = held(repo)
        assert all(states.get(node.name, -1) >= generation for node in cluster.replicas), (generation, states)
        assert all(node.refs(repo)["refs/heads/main"] == tip for node in cluster.replicas)


def test_min_acks_without_replicas_a_push_is_acknowledged_after_the_timeout_with_a_warning(
    min_acks: Cluster, tmp_path
):
    cluster = min_acks
    alice = Account("alice")
    repo = services.repository_create(owner=alice.user, name="unacked")
    env = client_env(tmp_path / "home")
    path = work_tree(tmp_path, env)
    commit(path, env, "a.txt", "a\n")
    for node in cluster.replicas:
        node.stop_worker()
    try:
        start = time.monotonic()
        out = git("push", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
        took = time.monotonic() - start
        # Durable on the primary: acknowledged, and told how many replicas hold it.
        assert "main -> main" in out.stderr
        assert "only 0 of 2 replicas hold this push after 3 s" in out.stderr
        assert took >= 3
        assert cluster.primary.refs(repo)["refs/heads/main"]
    finally:
        for node in cluster.replicas:
            node.start_worker()
    cluster.wait_replicated(repo)  # back, they catch up
