"""Appending to the replication log (repos.models.RepositoryChange).

`record` is called inside the transaction that records a change, after git made it on disk:
whoever reads generation N from the database finds the change on the primary's disk, so a
replica that fetches after reading N holds at least N. The repository's row is updated first,
which on PostgreSQL locks it until the commit: two changes of one repository get consecutive
generations in commit order, and changes of different repositories never wait on each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Max
from django.utils import timezone

from repos import signals
from repos.models import CONFIRMED_KINDS, ChangeKind, Push, Repository, RepositoryChange

SUMMARY_MAX = 300


def record(
    repository_id: int,
    kind: ChangeKind | str,
    *,
    push: Push | None = None,
    actor=None,
    summary: str = "",
    also: Mapping[str, Any] | None = None,
) -> RepositoryChange:
    """Append the repository's next change; its replicas are told once the transaction commits.
    `also`: other columns of the repository's row to update in the same statement (a push
    counts towards maintenance), one UPDATE per change rather than two."""
    if not connection.in_atomic_block:
        raise RuntimeError("changelog.record must run inside the transaction that records the change")
    kind = ChangeKind(kind)
    Repository.objects.filter(pk=repository_id).update(generation=F("generation") + 1, **(also or {}))
    generation = Repository.objects.filter(pk=repository_id).values_list("generation", flat=True).first()
    if generation is None:
        # Only a repository's purge runs after its row is gone: continue from the log.
        last = RepositoryChange.objects.filter(repository_id=repository_id).aggregate(m=Max("generation"))[
            "m"
        ]
        generation = (last or 0) + 1
    confirmed = kind in CONFIRMED_KINDS
    change = RepositoryChange.objects.create(
        repository_id=repository_id,
        generation=generation,
        kind=kind,
        push=push,
        actor=actor if getattr(actor, "pk", None) else None,
        summary=summary[:SUMMARY_MAX],
        needs_confirmation=confirmed,
    )
    change_id, actor_id = change.pk, change.actor_id
    transaction.on_commit(
        lambda: signals.repository_changed.send_robust(
            sender=RepositoryChange,
            change_id=change_id,
            repository_id=repository_id,
            generation=generation,
            kind=str(kind),
            actor_id=actor_id,
        )
    )
    return change


def complete(change_id: int) -> None:
    """Mark a change every replica has confirmed (or that no replica had to)."""
    RepositoryChange.objects.filter(pk=change_id, completed_at__isnull=True).update(
        completed_at=timezone.now()
    )


def current_generation(repository_id: int) -> int:
    return Repository.objects.filter(pk=repository_id).values_list("generation", flat=True).first() or 0
