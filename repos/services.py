"""Writes: users, tokens, repositories, members. Keyword-only, one transaction each."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from gitcore.git import run_git
from repos import changelog, creation, signals, tokens
from repos.audit import Action, record_audit
from repos.creation import invalid_input, validate_branch
from repos.creation import repository_check as repository_check  # callers check through services
from repos.errors import Conflict, InvalidInput
from repos.models import (
    AccessToken,
    ChangeKind,
    Membership,
    Repository,
    Role,
    TokenScope,
    User,
    Visibility,
)
from repos.names import validate_username


@transaction.atomic
def user_create(
    *, username: str, email: str = "", password: str | None = None, is_staff: bool = False
) -> User:
    try:
        validate_username(username)
    except ValidationError as exc:
        raise invalid_input("username", exc) from None
    if User.objects.filter(username__iexact=username).exists():
        raise Conflict(
            f"The username '{username}' is taken.", code="username_taken", fields={"username": ["taken"]}
        )
    user = User(username=username, email=email, is_staff=is_staff, is_superuser=is_staff)
    if password is not None:
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise invalid_input("password", exc) from None
        user.set_password(password)
    else:
        user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:
        raise Conflict(f"The username '{username}' is taken.", code="username_taken") from None
    return user


@transaction.atomic
def token_create(
    *, user: User, name: str = "", scope: str = TokenScope.READ, expires_at: datetime | None = None
) -> tuple[AccessToken, str]:
    """Create a token; returns the row and the secret, which is never stored or shown again."""
    if scope not in TokenScope.values:
        raise InvalidInput(
            f"Unknown scope {scope!r}; use read, write or status.", fields={"scope": ["invalid"]}
        )
    name = (name or "").strip() or f"token {timezone.now():%Y-%m-%d %H:%M}"
    if len(name) > 100 or any(ord(c) < 0x20 for c in name):
        raise InvalidInput("Token names are at most 100 printable characters.", fields={"name": ["invalid"]})
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("The expiry date must be in the future.", fields={"expires_at": ["invalid"]})
    secret = tokens.generate_secret()
    token = AccessToken.objects.create(
        user=user,
        name=name,
        scope=scope,
        digest=tokens.digest(secret),
        prefix=secret[: len(tokens.TOKEN_PREFIX) + 4],
        expires_at=expires_at,
    )
    return token, secret


def token_revoke(*, token: AccessToken) -> AccessToken:
    # Conditional: revoking twice keeps the first time.
    AccessToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


def repository_create(
    *,
    owner: User,
    name: str,
    description: str = "",
    visibility: str = Visibility.PUBLIC,
    default_branch: str | None = None,
    populate: Callable[[Path], None] | None = None,
) -> Repository:
    """Create a repository row and its bare repository on disk, or neither.

    `populate(path)` fills the new repository before it is renamed into place (an import
    brings its history that way: sources.importing.import_now).
    """
    return creation.repository_create(
        owner=owner,
        name=name,
        description=description,
        visibility=visibility,
        default_branch=default_branch,
        populate=populate,
    )


@transaction.atomic
def repository_update(
    *,
    repo: Repository,
    description: str | None = None,
    visibility: str | None = None,
    default_branch: str | None = None,
    actor: User | None = None,
    change_kind: ChangeKind = ChangeKind.WEB,
) -> Repository:
    """Change a repository's settings. A visibility change by a person (`actor`: an admin or
    staff, through a page or the API) is audited; the operator's commands pass none. A new
    default branch moves HEAD: a change in the replication log, of `change_kind`."""
    if description is not None:
        if len(description) > 350:
            raise InvalidInput(
                "Descriptions are at most 350 characters.", fields={"description": ["too_long"]}
            )
        repo.description = description
    if visibility is not None:
        if visibility not in Visibility.values:
            raise InvalidInput("Visibility is public or private.", fields={"visibility": ["invalid"]})
        if visibility != repo.visibility:
            if actor is not None:
                record_audit(
                    actor=actor,
                    action=Action.VISIBILITY,
                    repository=repo,
                    detail={"from": repo.visibility, "to": visibility},
                )
            # bundles moves the repository's bundles to the other storage area (issue 5).
            old, repo_id = repo.visibility, repo.pk
            transaction.on_commit(
                lambda: signals.visibility_changed.send_robust(
                    sender=Repository, repository_id=repo_id, old=old, new=visibility
                )
            )
        repo.visibility = visibility
    head_moved = False
    if default_branch is not None and default_branch != repo.default_branch:
        validate_branch(default_branch)
        run_git(["symbolic-ref", "HEAD", f"refs/heads/{default_branch}"], repo=repo.disk_path)
        repo.default_branch = default_branch
        head_moved = True
    repo.save()
    if head_moved:
        # HEAD is a ref: a replica's clones must start on the same branch as the primary's.
        # After the save, which writes the generation this instance was read with.
        change = changelog.record(
            repo.pk, change_kind, actor=actor, summary=f"default branch set to {default_branch}"
        )
        repo.generation = change.generation
    return repo


@transaction.atomic
def membership_set(
    *, repo: Repository, user: User, role: Role, actor: User | None = None
) -> Membership | None:
    """Give `user` a role on `repo`. The owner is always admin and has no membership row.
    A change made by a person (`actor`) is audited."""
    if user.pk == repo.owner_id:
        if role != Role.ADMIN:
            raise InvalidInput(
                "The owner is always an admin of their repository.", fields={"role": ["owner"]}
            )
        return None
    previous = Membership.objects.filter(repository=repo, user=user).values_list("role", flat=True).first()
    membership, _ = Membership.objects.update_or_create(repository=repo, user=user, defaults={"role": role})
    if actor is not None and previous != role:
        record_audit(
            actor=actor,
            action=Action.MEMBER_SET,
            repository=repo,
            target_user=user,
            detail={"from": Role(previous).label if previous is not None else None, "to": Role(role).label},
        )
    return membership


@transaction.atomic
def membership_remove(*, repo: Repository, user: User, actor: User | None = None) -> bool:
    role = Membership.objects.filter(repository=repo, user=user).values_list("role", flat=True).first()
    deleted, _ = Membership.objects.filter(repository=repo, user=user).delete()
    if deleted and actor is not None:
        record_audit(
            actor=actor,
            action=Action.MEMBER_REMOVE,
            repository=repo,
            target_user=user,
            detail={"from": Role(role).label if role is not None else ""},
        )
    return bool(deleted)
