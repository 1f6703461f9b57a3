"""Writes about SSH keys: adding and removing a person's keys and a repository's deploy keys,
and recording when a key was last used.

Each add or remove writes the key row, its audit row and the notification in one transaction
(Zulip's do_* actions): a key nobody was told about, or an audit log that misses one, cannot
exist. Keys are security credentials, so their owners (for a deploy key: the repository's
admins) are told of every change, including their own, as GitHub and GitLab mail them.
"""

from __future__ import annotations

import unicodedata
from datetime import timedelta

from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from notifications.services import notify
from repos import selectors as repo_selectors
from repos.audit import record_audit
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.models import Repository, Role, User
from sshgit.keyparse import KeyParseError, ParsedKey, parse_key
from sshgit.models import PublicKey

TITLE_MAX = 100
MAX_USER_KEYS = 100
MAX_DEPLOY_KEYS = 50
# Recording every use would write on every SSH command; once a minute tells whether a key is
# in use (as repos.tokens does for tokens).
LAST_USED_GRANULARITY = timedelta(minutes=1)
KEY_IN_USE = "This key is already in use"
# Bidirectional-text controls can make a title read as something else (Trojan Source).
_BIDI = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class KeyAction(models.TextChoices):
    """Audit log actions of this app (repos.audit.Action lists the repos-level ones)."""

    SSH_KEY_ADD = "ssh_key_add"
    SSH_KEY_REMOVE = "ssh_key_remove"
    DEPLOY_KEY_ADD = "deploy_key_add"
    DEPLOY_KEY_REMOVE = "deploy_key_remove"


def can_manage_deploy_keys(user, repo: Repository) -> bool:
    """The repository's admins, and site staff (who moderate every repository)."""
    if repo.deleted_at is not None or user is None or not user.is_authenticated or not user.is_active:
        return False
    return bool(user.is_staff) or repo_selectors.can_admin(user, repo)


def clean_title(title: str, parsed: ParsedKey) -> str:
    """The title as stored: stripped; the key's comment when left blank."""
    value = (title or "").strip() or parsed.comment.strip()
    if not value:
        raise InvalidInput("Give the key a title.", fields={"title": ["Give the key a title."]})
    if len(value) > TITLE_MAX:
        message = f"Titles are at most {TITLE_MAX} characters."
        raise InvalidInput(message, fields={"title": [message]})
    if any(unicodedata.category(ch) == "Cc" or ch in _BIDI for ch in value):
        message = "Titles may not contain control characters."
        raise InvalidInput(message, fields={"title": [message]})
    return value


def _parse(text: str) -> ParsedKey:
    try:
        return parse_key(text)
    except KeyParseError as exc:
        raise InvalidInput(str(exc), code="invalid_key", fields={"key": [str(exc)]}) from None


def _in_use() -> Conflict:
    # Never whose: the same message for your own key, someone else's and a deploy key, so the
    # form cannot be used to find out who holds a public key.
    return Conflict(KEY_IN_USE, code="key_in_use", fields={"key": [KEY_IN_USE]})


def _create(**fields) -> PublicKey:
    if PublicKey.objects.filter(fingerprint=fields["fingerprint"]).exists():
        raise _in_use()
    try:
        with transaction.atomic():  # a savepoint: a concurrent insert loses here, not later
            return PublicKey.objects.create(**fields)
    except IntegrityError:
        raise _in_use() from None


def _detail(key: PublicKey) -> dict:
    return {"title": key.title, "fingerprint": key.fingerprint, "key_type": key.key_type}


@transaction.atomic
def add_user_key(user: User, *, title: str, text: str) -> PublicKey:
    parsed = _parse(text)
    title = clean_title(title, parsed)
    # Lock the user's row so two adds cannot both pass the limit.
    User.objects.select_for_update().filter(pk=user.pk).exists()
    if PublicKey.objects.filter(user=user).count() >= MAX_USER_KEYS:
        raise Conflict(
            f"You have {MAX_USER_KEYS} keys, the most allowed: remove one first.", code="too_many_keys"
        )
    key = _create(
        user=user,
        created_by=user,
        title=title,
        key_type=parsed.key_type,
        key_data=parsed.key_data,
        fingerprint=parsed.fingerprint,
        bits=parsed.bits,
    )
    record_audit(actor=user, action=KeyAction.SSH_KEY_ADD, target_user=user, detail=_detail(key))
    notify(
        user,
        kind="ssh_key",
        text=f"The SSH key '{key.title}' ({key.fingerprint}) was added to your account.",
        url=reverse("ssh-keys"),
        actor=user,
    )
    return key


@transaction.atomic
def remove_user_key(user: User, key_id: int) -> PublicKey:
    key = PublicKey.objects.select_for_update().filter(pk=key_id, user=user).first()
    if key is None:
        raise NotFound("Key not found.")
    detail = _detail(key)
    key.delete()
    record_audit(actor=user, action=KeyAction.SSH_KEY_REMOVE, target_user=user, detail=detail)
    notify(
        user,
        kind="ssh_key",
        text=f"The SSH key '{detail['title']}' ({detail['fingerprint']}) was removed from your account.",
        url=reverse("ssh-keys"),
        actor=user,
    )
    return key


def _tell_admins(repo: Repository, *, acting_user: User, text: str) -> None:
    url = reverse("repository-deploy-keys", args=[repo.owner.username, repo.name])
    for admin, role in repo_selectors.members(repo):
        if role == Role.ADMIN and admin.is_active:
            notify(admin, kind="deploy_key", text=text, url=url, repository=repo, actor=acting_user)


def _require_manager(repo: Repository, acting_user: User) -> None:
    if not can_manage_deploy_keys(acting_user, repo):
        raise Forbidden("Only the repository's admins may manage its deploy keys.")


@transaction.atomic
def add_deploy_key(
    repo: Repository, *, acting_user: User, title: str, text: str, read_write: bool = False
) -> PublicKey:
    _require_manager(repo, acting_user)
    parsed = _parse(text)
    title = clean_title(title, parsed)
    Repository.objects.select_for_update().filter(pk=repo.pk).exists()
    if PublicKey.objects.filter(repository=repo).count() >= MAX_DEPLOY_KEYS:
        raise Conflict(
            f"This repository has {MAX_DEPLOY_KEYS} deploy keys, the most allowed: remove one first.",
            code="too_many_keys",
        )
    key = _create(
        repository=repo,
        created_by=acting_user,
        title=title,
        key_type=parsed.key_type,
        key_data=parsed.key_data,
        fingerprint=parsed.fingerprint,
        bits=parsed.bits,
        read_write=bool(read_write),
    )
    record_audit(
        actor=acting_user,
        action=KeyAction.DEPLOY_KEY_ADD,
        repository=repo,
        detail={**_detail(key), "read_write": key.read_write},
    )
    access = "read-write" if key.read_write else "read-only"
    _tell_admins(
        repo,
        acting_user=acting_user,
        text=f"{acting_user.username} added the {access} deploy key '{key.title}' ({key.fingerprint}) "
        f"to {repo.full_name}.",
    )
    return key


@transaction.atomic
def remove_deploy_key(repo: Repository, *, acting_user: User, key_id: int) -> PublicKey:
    _require_manager(repo, acting_user)
    key = PublicKey.objects.select_for_update().filter(pk=key_id, repository=repo).first()
    if key is None:
        raise NotFound("Deploy key not found.")
    detail = {**_detail(key), "read_write": key.read_write}
    key.delete()
    record_audit(actor=acting_user, action=KeyAction.DEPLOY_KEY_REMOVE, repository=repo, detail=detail)
    _tell_admins(
        repo,
        acting_user=acting_user,
        text=f"{acting_user.username} removed the deploy key '{detail['title']}' ({detail['fingerprint']}) "
        f"from {repo.full_name}.",
    )
    return key


def touch_last_used(key: PublicKey) -> bool:
    """Record that `key` was just used; at most one write per key per minute, however many
    sessions use it (a conditional UPDATE: no read, no lock). True if this call wrote."""
    now = timezone.now()
    updated = (
        PublicKey.objects.filter(pk=key.pk)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_GRANULARITY))
        .update(last_used_at=now)
    )
    if updated:
        key.last_used_at = now
    return bool(updated)
