"""Concurrent `git push`es to one repository through the live server each get their own change
in the replication log: distinct, consecutive generations in the order they committed, and the
repository's generation is the last of them (on SQLite and PostgreSQL alike)."""

from __future__ import annotations

import threading

import pytest

from repos.models import Push, Repository, RepositoryChange

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

PUSHERS = 4
ROUNDS = 3


def test_concurrent_pushes_get_consecutive_generations(world):
    people = [world.add(f"dev{i}", "maintainer") for i in range(PUSHERS)]
    before = Repository.objects.get(pk=world.repo.pk).generation
    assert before == RepositoryChange.objects.filter(repository=world.repo).count()  # create, first push
    start = threading.Barrier(PUSHERS)
    failures: list[str] = []

    def run(person):
        start.wait()
        for round_ in range(ROUNDS):
            person.commit(f"{person.username} {round_}", name=f"{person.username}.txt")
            result = person.push(f"HEAD:refs/heads/{person.username}")
            if result.returncode != 0:
                failures.append(result.stderr)

    threads = [threading.Thread(target=run, args=(person,)) for person in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures

    rows = list(RepositoryChange.objects.filter(repository=world.repo, generation__gt=before).order_by("id"))
    assert len(rows) == PUSHERS * ROUNDS
    # Numbered in the order they were appended (id order), with neither gap nor repeat.
    assert [r.generation for r in rows] == list(range(before + 1, before + 1 + PUSHERS * ROUNDS))
    assert {r.kind for r in rows} == {"push"} and all(r.push_id for r in rows)
    assert Repository.objects.get(pk=world.repo.pk).generation == before + PUSHERS * ROUNDS
    # Every push is in the log once, and each pusher's pushes in the order they made them.
    pushes = Push.objects.filter(repository=world.repo, change__generation__gt=before)
    assert pushes.count() == PUSHERS * ROUNDS
    for person in people:
        mine = [r.generation for r in rows if r.actor_id == person.user.pk]
        assert len(mine) == ROUNDS and mine == sorted(mine)
