"""Reading keys. (A first version: the keys pages' helper extends it.)"""

from __future__ import annotations

from sshgit.models import PublicKey


def _usable(key: PublicKey | None) -> PublicKey | None:
    if key is None:
        return None
    if key.user is not None and not key.user.is_active:
        return None
    if key.repository is not None and key.repository.deleted_at is not None:
        return None
    return key


def session_key(key_id: int) -> PublicKey | None:
    return _usable(
        PublicKey.objects.select_related("user", "repository", "created_by").filter(pk=key_id).first()
    )


def usable_key(fingerprint: str) -> PublicKey | None:
    return _usable(
        PublicKey.objects.select_related("user", "repository").filter(fingerprint=fingerprint).first()
    )
