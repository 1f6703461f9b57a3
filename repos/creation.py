"""Creating a repository: its checks, its row and its directory, or neither. Below both
repos.services and sources.importing (an import creates the repository it fills)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from gitcore.git import is_valid_refname
from repos import changelog, storage
from repos.errors import Conflict, InvalidInput
from repos.models import ChangeKind, Repository, RepositoryRedirect, User, Visibility
from repos.names import validate_repo_name


def invalid_input(field: str, exc: ValidationError) -> InvalidInput:
    messages = list(exc.messages)
    return InvalidInput(messages[0], code=getattr(exc, "code", None) or "invalid", fields={field: messages})


def validate_branch(branch: str) -> None:
    # A leading '-' is a valid ref but reads as an option on every git command line.
    if (
        not isinstance(branch, str)
        or not branch
        or branch.startswith("-")
        or not is_valid_refname(f"refs/heads/{branch}")
    ):
        raise InvalidInput(f"{branch!r} is not a valid branch name.", fields={"default_branch": ["invalid"]})


def repository_check(
    *,
    owner: User,
    name: str,
    description: str = "",
    visibility: str = Visibility.PUBLIC,
    default_branch: str | None = None,
) -> None:
    """What repository_create refuses, checked before anything is created (an import checks
    this before it reaches the network)."""
    try:
        validate_repo_name(name)
    except ValidationError as exc:
        raise invalid_input("name", exc) from None
    if visibility not in Visibility.values:
        raise InvalidInput("Visibility is public or private.", fields={"visibility": ["invalid"]})
    if len(description or "") > 350:
        raise InvalidInput("Descriptions are at most 350 characters.", fields={"description": ["too_long"]})
    if default_branch is not None:
        validate_branch(default_branch)
    if Repository.objects.filter(owner=owner, name__iexact=name).exists():
        raise Conflict(
            f"{owner.username}/{name} already exists.", code="name_taken", fields={"name": ["taken"]}
        )


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
    `populate(path)` fills the new repository before it is renamed into place."""
    if default_branch is None:
        default_branch = "main"
    repository_check(
        owner=owner, name=name, description=description, visibility=visibility, default_branch=default_branch
    )

    created_path: Path | None = None
    try:
        with transaction.atomic():
            repo = Repository.objects.create(
                owner=owner,
                name=name,
                description=description or "",
                visibility=visibility,
                default_branch=default_branch,
            )
            # A new repository under a renamed one's old name takes that name back.
            RepositoryRedirect.objects.filter(owner_name__iexact=owner.username, name__iexact=name).delete()
            created_path = storage.create_repository_on_disk(
                repo.pk, default_branch=default_branch, populate=populate
            )
            # Its first change: a replica creates its copy (and fetches what `populate` put in).
            change = changelog.record(
                repo.pk, ChangeKind.CREATE, actor=owner, summary=f"created {repo.full_name}"
            )
            repo.generation = change.generation
    except IntegrityError:
        if created_path:
            storage.remove_repository_from_disk(created_path)
        raise Conflict(f"{owner.username}/{name} already exists.", code="name_taken") from None
    except BaseException:
        # The transaction rolled back; the disk must follow it.
        if created_path:
            storage.remove_repository_from_disk(created_path)
        raise
    return repo
