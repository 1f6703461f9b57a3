"""Writing keys. (A first version: the keys pages' helper extends it.)"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from sshgit.models import PublicKey

LAST_USED_GRANULARITY = timedelta(minutes=1)


def touch_last_used(key: PublicKey) -> None:
    now = timezone.now()
    PublicKey.objects.filter(pk=key.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_GRANULARITY)
    ).update(last_used_at=now)
