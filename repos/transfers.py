"""Counting what each repository serves, for the offload figure (bytes from bundles against
bytes from git). One conditional UPDATE per request, creating the day's row when missing."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from repos.models import DailyTransfer


def add(repo_id: int, **increments: int) -> None:
    """add(repo.pk, git_bytes=n, git_requests=1) and so on; never raises for a lost race."""
    if not any(increments.values()):
        return
    day = timezone.now().date()
    changes = {field: F(field) + value for field, value in increments.items()}
    if DailyTransfer.objects.filter(repository_id=repo_id, day=day).update(**changes):
        return
    try:
        with transaction.atomic():
            DailyTransfer.objects.create(repository_id=repo_id, day=day, **increments)
    except IntegrityError:
        # Another request created the row between our UPDATE and INSERT.
        DailyTransfer.objects.filter(repository_id=repo_id, day=day).update(**changes)
