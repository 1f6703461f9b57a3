"""The same pushes over smart HTTP (to owner/project) and over SSH (to its twin owner/twin) are
recorded alike: Push, RefUpdate and PushCommit rows equal but for ids, times and the protocol,
and the tasks that follow a push (workspaces' rows) do the same."""

from __future__ import annotations

import pytest

from repos import services
from repos.models import Push, PushCommit
from tests.sshgit.sshsupport import adopt, git
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
    both(alice, alice_http.work, "-o", "topic=fix", "HEAD:refs/for/main")  # a nameless push, with a topic
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
