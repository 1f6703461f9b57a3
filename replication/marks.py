"""Read-your-writes: each change a user made is remembered as their WriteMark of the
repository, which a replica must hold before it serves that user the repository
(replication.freshness). Written when the change commits, so before a git push's answer
reaches its client the mark already asks for it."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.dispatch import receiver
from django.utils import timezone

from replication import nodes
from replication.models import WriteMark
from repos import signals
from repos.models import ChangeKind

log = logging.getLogger(__name__)


def _raise_mark(user_id: int, repository_id: int, generation: int) -> int:
    # Only ever upwards: two changes' receivers may run in either order.
    return WriteMark.objects.filter(
        user_id=user_id, repository_id=repository_id, generation__lt=generation
    ).update(generation=generation, written_at=timezone.now())


def record_write(user_id: int, repository_id: int, generation: int) -> None:
    if _raise_mark(user_id, repository_id, generation):
        return
    try:
        with transaction.atomic():
            _, created = WriteMark.objects.get_or_create(
                user_id=user_id, repository_id=repository_id, defaults={"generation": generation}
            )
    except IntegrityError:
        # The repository or the user is gone already (a purge, a deleted account): no reads
        # of it are left to keep consistent.
        return
    if not created:
        _raise_mark(user_id, repository_id, generation)


@receiver(signals.repository_changed, dispatch_uid="replication.marks.write_mark")
def write_mark(sender, *, repository_id, generation, kind, actor_id=None, **kwargs) -> None:
    if actor_id is None or kind == ChangeKind.PURGE_REPOSITORY or not nodes.has_replicas():
        return
    record_write(actor_id, repository_id, generation)
