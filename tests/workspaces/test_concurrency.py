"""Ten users pushing to their own workspaces at once leave a pushlog consistent with the refs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from repos.models import Push, PushCommit, RefUpdate

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
USERS = 10
PUSHES_EACH = 3


def test_ten_users_push_at_once(world):
    pushers = [world.add(f"user{i}") for i in range(USERS)]
    # Prepare every commit first, so the pushes themselves overlap as much as possible.
    plans = {
        p.username: [
            p.commit(f"{p.username} change {n}", name=f"{p.username}.txt") for n in range(PUSHES_EACH)
        ]
        for p in pushers
    }

    def push_all(pusher):
        results = []
        for n, sha in enumerate(plans[pusher.username]):
            results.append(pusher.push(f"{sha}:refs/users/{pusher.username}/series"))
            results.append(pusher.push(f"{sha}:refs/users/{pusher.username}/step{n}"))
        return results

    with ThreadPoolExecutor(max_workers=USERS) as pool:
        outcomes = list(pool.map(push_all, pushers))
    failures = [r.stderr for results in outcomes for r in results if r.returncode != 0]
    assert failures == []

    refs = world.refs()
    pushes = Push.objects.filter(repository=world.repo).exclude(pusher_name="owner")
    assert pushes.count() == USERS * PUSHES_EACH * 2
    for pusher in pushers:
        shas = plans[pusher.username]
        assert refs[f"refs/users/{pusher.username}/series"] == shas[-1]
        # The pushlog replays to the refs: the last recorded update of each ref is its value.
        for ref, value in refs.items():
            if ref.startswith(f"refs/users/{pusher.username}/"):
                last = RefUpdate.objects.filter(push__repository=world.repo, ref=ref).latest("push_id")
                assert last.new == value, ref
                assert last.push.pusher_name == pusher.username
        # Each of the user's commits is in the pushlog once, in one of their own pushes.
        owners = set(
            PushCommit.objects.filter(repository=world.repo, sha__in=shas).values_list(
                "push__pusher_name", flat=True
            )
        )
        assert owners == {pusher.username}
        assert PushCommit.objects.filter(repository=world.repo, sha__in=shas).count() == PUSHES_EACH
