"""Asserting what an action appended to the replication log (repos.changelog): exactly one row,
the repository's next generation, its kind and actor; or nothing at all."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from django.db.models import Max

from repos.models import Repository, RepositoryChange


def last_generation(repo_id: int) -> int:
    return RepositoryChange.objects.filter(repository_id=repo_id).aggregate(m=Max("generation"))["m"] or 0


def row_generation(repo_id: int) -> int | None:
    return Repository.objects.filter(pk=repo_id).values_list("generation", flat=True).first()


@dataclass
class Appended:
    row: RepositoryChange | None = None
    rows: list[RepositoryChange] = field(default_factory=list)


@contextlib.contextmanager
def one_change(repo_id: int, kind: str, *, actor=None, push: bool | None = None):
    """The block appends exactly one row of `kind` to the repository's log, numbered one past
    its last, and the repository's generation (while it has a row) says so."""
    before = last_generation(repo_id)
    got = Appended()
    yield got
    got.rows = list(RepositoryChange.objects.filter(repository_id=repo_id, generation__gt=before))
    assert [(r.kind, r.generation) for r in got.rows] == [(kind, before + 1)], got.rows
    got.row = got.rows[0]
    assert row_generation(repo_id) in (None, before + 1)
    if actor is not None:
        assert got.row.actor_id == actor.pk
    if push is not None:
        assert (got.row.push_id is not None) == push
    assert len(got.row.summary) <= 300 and got.row.summary


@contextlib.contextmanager
def no_change(repo_id: int):
    before, generation = last_generation(repo_id), row_generation(repo_id)
    yield
    assert last_generation(repo_id) == before
    assert row_generation(repo_id) == generation
