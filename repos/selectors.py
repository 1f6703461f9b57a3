"""Reads: who may see what, and lists of repositories."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from repos.hooks.pushpolicy import Rules
from repos.models import (
    ImportState,
    Membership,
    Mirror,
    Repository,
    RepositoryImport,
    RepositoryRedirect,
    Role,
    User,
    Visibility,
)
from repos.names import validate_repo_name, validate_username


def role_for(user, repo: Repository) -> Role | None:
    """The user's role on the repository: the owner is admin; members have their role."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    if repo.owner_id == user.pk:
        return Role.ADMIN
    membership = Membership.objects.filter(repository=repo, user=user).values_list("role", flat=True).first()
    return Role(membership) if membership is not None else None


def _is_staff(user) -> bool:
    return user is not None and user.is_authenticated and user.is_active and user.is_staff


def can_read(user, repo: Repository) -> bool:
    if repo.deleted_at is not None:
        # A deleted repository is gone for everyone but staff, who may restore it.
        return _is_staff(user)
    if repo.visibility == Visibility.PUBLIC:
        return True
    if user is not None and user.is_authenticated and user.is_active and user.is_staff:
        # Site staff see everything, for moderation.
        return True
    return role_for(user, repo) is not None


def can_admin(user, repo: Repository) -> bool:
    return repo.deleted_at is None and role_for(user, repo) == Role.ADMIN


def visible_repositories(user) -> QuerySet[Repository]:
    qs = Repository.objects.select_related("owner").filter(deleted_at__isnull=True)
    if user is None or not user.is_authenticated:
        return qs.filter(visibility=Visibility.PUBLIC)
    if user.is_staff:
        return qs
    return qs.filter(Q(visibility=Visibility.PUBLIC) | Q(owner=user) | Q(memberships__user=user)).distinct()


def _valid(validator, value: str) -> bool:
    try:
        validator(value)
    except ValidationError:
        return False
    return True


def repository_by_name(owner: str, name: str) -> Repository | None:
    """Case-insensitive look-up by `owner/name`, as the uniqueness constraint is.

    Names from URLs are checked first: a NUL or other junk never reaches the database
    (SQLite compared 'name\\x00' equal to 'name'; PostgreSQL refuses NUL outright).
    """
    if not _valid(validate_username, owner.lower()) or not _valid(validate_repo_name, name):
        return None
    return (
        Repository.objects.select_related("owner")
        .filter(owner__username__iexact=owner, name__iexact=name)
        .first()
    )


def redirected_repository(owner: str, name: str) -> Repository | None:
    """The repository that was once called `owner/name` (renamed or transferred since), if any.
    Only consulted after repository_by_name missed: a live repository of that name wins."""
    if not _valid(validate_username, owner.lower()) or not _valid(validate_repo_name, name):
        return None
    redirect = (
        RepositoryRedirect.objects.select_related("repository__owner")
        .filter(owner_name__iexact=owner, name__iexact=name)
        .first()
    )
    return redirect.repository if redirect is not None else None


def deleted_repositories() -> QuerySet[Repository]:
    """Soft-deleted repositories awaiting purge, for staff."""
    return Repository.objects.select_related("owner", "deleted_by").filter(deleted_at__isnull=False)


def readable_repository(user, owner: str, name: str) -> Repository | None:
    """The repository if it exists and the user may read it; None otherwise (answer 404)."""
    repo = repository_by_name(owner, name)
    if repo is None or not can_read(user, repo):
        return None
    return repo


def user_by_name(username: str) -> User | None:
    if not _valid(validate_username, username.lower()):
        return None
    return User.objects.filter(username__iexact=username, is_active=True).first()


def members(repo: Repository) -> list[tuple[User, Role]]:
    rows = [(repo.owner, Role.ADMIN)]
    for m in Membership.objects.filter(repository=repo).select_related("user").order_by("user__username"):
        if m.user_id != repo.owner_id:
            rows.append((m.user, Role(m.role)))
    return rows


def push_rules(repo: Repository) -> Rules:
    """The rules a push is judged by where settings.PUSH_RULES names none: the default branch
    is protected, and a mirror's branches and tags move only through its syncs."""
    return Rules(
        default_branch=repo.default_branch,
        mirror=Mirror.objects.filter(repository=repo, enabled=True).exists(),
    )


def active_import(repo: Repository) -> RepositoryImport | None:
    """The import filling the repository, queued or running: until it ends, nothing but the
    import writes its refs (pushes, web edits and the push reconciliation leave it alone)."""
    return (
        RepositoryImport.objects.filter(repository=repo, state__in=(ImportState.QUEUED, ImportState.RUNNING))
        .order_by("-id")
        .first()
    )
