"""Whether this replica may answer a read of a repository itself.

A replica serves a repository it holds at the primary's generation. Behind it, it still
serves anonymous readers while its copy lags by less than REPLICA_MAX_LAG_SECONDS (the lag
is the age of the first change it lacks), and a signed-in reader too unless it lacks that
reader's own last write (their WriteMark): whoever pushed sees their push. Everything else
goes to the primary. Two queries at most: the repository with the generation this node
holds, then, only when it is behind, the first missing change with the reader's mark.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from replication.models import ReplicaState, WriteMark
from repos import storage
from repos.auth import parse_authorization
from repos.models import Repository, RepositoryChange
from repos.tokens import digest, looks_like_token


@dataclass(frozen=True)
class Reader:
    """Who is asking, as far as routing needs to know: enough to find their WriteMark, never
    proof of identity (the view that answers authenticates them). A wrong claim only sends the
    request to the primary, or serves it without a mark the claimant never had."""

    user_id: int | None = None
    username: str | None = None
    token_digest: str | None = None

    @property
    def anonymous(self) -> bool:
        return self.user_id is None and self.username is None and self.token_digest is None


ANONYMOUS = Reader()


def reader_of(request) -> Reader:
    """The session's user id (the session is loaded once, for the view as well), else whom the
    Authorization header names: git and API clients send a token, never a cookie. Tokens are
    not checked here: that is the view's work, and doing it twice would cost a query more."""
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        user_id = session.get(SESSION_KEY)
        if user_id is not None:
            try:
                return Reader(user_id=int(user_id))
            except (TypeError, ValueError):
                pass
    try:
        parsed = parse_authorization(request.META.get("HTTP_AUTHORIZATION", ""))
    except ValueError:
        return ANONYMOUS  # the view refuses malformed credentials; nothing to route on
    if parsed is None:
        return ANONYMOUS
    username, secret = parsed
    if username:
        return Reader(username=username)
    if looks_like_token(secret):
        return Reader(token_digest=digest(secret))
    return ANONYMOUS


@dataclass(frozen=True)
class Holding:
    """A repository as the primary has it (generation) and as this node holds it (held)."""

    repository_id: int
    generation: int
    held: int | None


def holding(owner: str, name: str) -> Holding | None:
    """Query 1: the repository named in the URL (case-insensitive, as the views look it up)
    and the generation of it this node holds. None: no such repository (renamed, perhaps: the
    primary answers with its redirect)."""
    state = ReplicaState.objects.filter(node__name=settings.HOSTSITE_NODE, repository_id=OuterRef("pk"))
    rows = (
        Repository.objects.filter(owner__username__iexact=owner, name__iexact=name)
        .annotate(held=Subquery(state.values("generation")[:1]))
        .order_by()  # one row at most (unique, case-insensitively): nothing to sort
        .values_list("pk", "generation", "held")[:1]
    )
    return next((Holding(*row) for row in rows), None)


def _mark_filter(reader: Reader) -> dict:
    if reader.user_id is not None:
        return {"user_id": reader.user_id}
    if reader.username is not None:
        return {"user__username__iexact": reader.username}
    return {"user__tokens__digest": reader.token_digest}


def has_copy(repository: Holding) -> bool:
    """Whether this node holds some generation of it: a row, and the disk agrees (a wiped disk
    is not yet re-synced)."""
    return repository.held is not None and storage.repository_path(repository.repository_id).is_dir()


def is_current(repository: Holding) -> bool:
    """Held at the primary's generation: served to anyone, whoever they are (no need to ask)."""
    return repository.held == repository.generation and has_copy(repository)


def serves_locally(repository: Holding, reader: Reader) -> bool:
    if not has_copy(repository):
        return False
    assert repository.held is not None
    if repository.held == repository.generation:
        return True
    if repository.held > repository.generation:
        # The log went backwards under this copy (a database restored from a backup): it
        # holds changes the primary does not know of.
        return False
    changes = RepositoryChange.objects.filter(
        repository_id=repository.repository_id, generation=repository.held + 1
    )
    mark = None
    if reader.anonymous:
        first_missing_at = changes.values_list("created_at", flat=True).first()
    else:
        marks = WriteMark.objects.filter(repository_id=OuterRef("repository_id"), **_mark_filter(reader))
        row = (
            changes.annotate(mark=Subquery(marks.values("generation")[:1]))
            .values_list("created_at", "mark")
            .first()
        )
        first_missing_at, mark = row if row is not None else (None, None)
    if first_missing_at is None:
        return False  # a gap in the log: the primary knows better
    lag = timezone.now() - first_missing_at
    if lag >= timedelta(seconds=settings.REPLICA_MAX_LAG_SECONDS):
        return False
    return mark is None or repository.held >= mark
