"""Commit statuses: what a CI reports about one commit, per context ("ci/build", "lint"), and
the combined state pages, the API and merge rules read.

Writing: `status_set` validates everything it is given before it touches the database, so a
refused report stores nothing. Descriptions longer than DESCRIPTION_MAX are refused, not cut:
GitHub truncates silently, and a CI that learns its text was too long can shorten it where the
important part is kept. A report for a context the commit already has replaces that row (the
latest report wins, as on GitHub); `commit_status_changed` is sent after commit only when the
state changed (a new context counts as a change), so a CI re-posting "pending" notifies nobody.

Who may post: users with write access (maintainer or admin) to the repository. The API decides
which credentials may reach this at all (repos.api.permissions: write and status tokens).
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from gitcore.oids import object_format
from repos import selectors, signals
from repos.browse import visible_commit
from repos.errors import Forbidden, InvalidInput, NotFound
from repos.models import CommitStatus, Repository, Role, StatusState
from repos.models.statuses import CONTEXT_MAX, DESCRIPTION_MAX, TARGET_URL_MAX
from repos.visibility import view_for

DEFAULT_CONTEXT = "default"
# Contexts per commit: pages and the combined status list them all, so their number is bounded.
MAX_CONTEXTS = 100
# Characters no context, description or URL may carry: control characters (a description may
# keep line breaks and tabs), format characters such as bidi overrides, which make text read
# differently from what it is, and lone surrogates, which no database stores.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs"}
_DESCRIPTION_CONTROLS = frozenset({"\n", "\t"})

# How pages show a state at a glance (next to its word, or in a title that names it).
STATE_SYMBOLS = {"success": "\u2713", "failure": "\u2717", "error": "\u2717", "pending": "\u25cf"}
# How bad each state is: the combined state is the worst among the contexts (error counts as failure).
_SEVERITY: dict[str, int] = {
    StatusState.ERROR: 3,
    StatusState.FAILURE: 3,
    StatusState.PENDING: 2,
    StatusState.SUCCESS: 1,
}


@dataclass(frozen=True)
class Combined:
    """A commit's statuses (latest per context) and their combined state: "failure" if any
    failed or errored, else "pending" if any is pending, "success" if all succeeded, "" when
    there is none."""

    sha: str
    state: str
    statuses: tuple[CommitStatus, ...]

    @property
    def total_count(self) -> int:
        return len(self.statuses)


def combined_state(states: Iterable[str]) -> str:
    worst = max(states, key=lambda s: _SEVERITY.get(s, 0), default="")
    if worst in (StatusState.ERROR, StatusState.FAILURE):
        return StatusState.FAILURE.value
    return str(worst)


# --- Validation --------------------------------------------------------------------------


def _refused_character(text: str, allowed: frozenset[str] = frozenset()) -> bool:
    return any(c not in allowed and unicodedata.category(c) in _REFUSED_CATEGORIES for c in text)


def clean_state(state) -> str:
    if not isinstance(state, str) or state not in StatusState.values:
        raise InvalidInput(
            "state must be one of pending, success, failure or error.", fields={"state": ["invalid"]}
        )
    return state


def clean_context(context) -> str:
    if context is None or context == "":
        return DEFAULT_CONTEXT
    if not isinstance(context, str):
        raise InvalidInput("context must be a string.", fields={"context": ["invalid"]})
    context = context.strip()
    if not context or len(context) > CONTEXT_MAX or _refused_character(context):
        raise InvalidInput(
            f"context must be 1 to {CONTEXT_MAX} printable characters, with no control characters.",
            fields={"context": ["invalid"]},
        )
    return context


def clean_description(description) -> str:
    if description is None:
        return ""
    if not isinstance(description, str):
        raise InvalidInput("description must be a string.", fields={"description": ["invalid"]})
    description = description.strip()
    if len(description) > DESCRIPTION_MAX:
        raise InvalidInput(
            f"description is {len(description)} characters; at most {DESCRIPTION_MAX} are kept, shorten it.",
            fields={"description": ["too_long"]},
        )
    if _refused_character(description, _DESCRIPTION_CONTROLS):
        raise InvalidInput(
            "description may not contain control characters (line breaks and tabs are fine).",
            fields={"description": ["invalid"]},
        )
    return description


def clean_target_url(url) -> str:
    """ "" or an absolute http(s) URL: pages link it, so nothing a browser would run
    (`javascript:`) or resolve against the site (`/path`, `//host`) gets in."""
    if url is None or url == "":
        return ""
    message = (
        f"target_url must be an absolute http:// or https:// URL of at most {TARGET_URL_MAX} characters."
    )
    if not isinstance(url, str) or len(url) > TARGET_URL_MAX:
        raise InvalidInput(message, fields={"target_url": ["invalid"]})
    if _refused_character(url) or any(c.isspace() for c in url) or "\\" in url:
        raise InvalidInput(message, fields={"target_url": ["invalid"]})
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise InvalidInput(message, fields={"target_url": ["invalid"]}) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InvalidInput(message, fields={"target_url": ["invalid"]})
    return url


def resolve_sha(repo: Repository, user, sha) -> str:
    """The full lower-case id of the commit `sha` names (4 hex digits up to a whole id of the
    repository's format, any case) as `user` may see it. Missing, not a commit, ambiguous, or
    only reachable from work a moderator hid: NotFound, all alike, as the commit page answers."""
    fmt = object_format(repo.disk_path)
    prefix = fmt.parse_prefix(sha) if isinstance(sha, str) else None
    if prefix is None:
        raise InvalidInput(f"sha must be 4 to {fmt.hexsz} hexadecimal digits.", fields={"sha": ["invalid"]})
    view = view_for(repo, user)
    full = visible_commit(repo.disk_path, prefix, view)
    if full is None or view.reaches_hidden([full]):
        raise NotFound(f"No commit {prefix} in {repo.full_name}.", fields={"sha": ["not_found"]})
    return full


# --- Writing -----------------------------------------------------------------------------


def may_post(user, repo: Repository) -> bool:
    """Write access: what pushing to the repository's branches needs."""
    role = selectors.role_for(user, repo)
    return not repo.is_deleted and role is not None and role >= Role.MAINTAINER


def status_set(
    *,
    repo: Repository,
    user,
    sha: str,
    state: str,
    context: str | None = None,
    description: str | None = None,
    target_url: str | None = None,
) -> tuple[CommitStatus, str]:
    """Store the status of `context` on the commit `sha`; returns the row and the previous
    state of that context ("" when it is new)."""
    if not may_post(user, repo):
        raise Forbidden(
            "Posting commit statuses needs write access (maintainer or admin) to the repository.",
            code="forbidden",
        )
    fields = {
        "state": clean_state(state),
        "description": clean_description(description),
        "target_url": clean_target_url(target_url),
    }
    context = clean_context(context)
    full = resolve_sha(repo, user, sha)
    with transaction.atomic():
        row, previous = _upsert(repo, full, context, fields, user)
    if previous != row.state:
        repo_id = repo.pk
        new_state = row.state
        transaction.on_commit(
            lambda: signals.commit_status_changed.send_robust(
                sender=CommitStatus,
                repository_id=repo_id,
                sha=full,
                context=context,
                state=new_state,
                previous_state=previous,
            )
        )
    return row, previous


def _upsert(repo: Repository, sha: str, context: str, fields: dict, user) -> tuple[CommitStatus, str]:
    rows = CommitStatus.objects.select_for_update().filter(repository=repo, sha=sha, context=context)
    row = rows.first()
    if row is None:
        if CommitStatus.objects.filter(repository=repo, sha=sha).count() >= MAX_CONTEXTS:
            raise InvalidInput(
                f"This commit already has statuses for {MAX_CONTEXTS} contexts; report on one of those.",
                fields={"context": ["too_many"]},
            )
        try:
            # A savepoint: a concurrent first report of the same context wins the insert, and
            # this one then updates its row like any later report.
            with transaction.atomic():
                created = CommitStatus.objects.create(
                    repository=repo, sha=sha, context=context, creator=user, **fields
                )
            return created, ""
        except IntegrityError:
            row = rows.get()
    previous = row.state
    for name, value in fields.items():
        setattr(row, name, value)
    row.creator = user
    row.save(update_fields=[*fields, "creator", "updated_at"])
    return row, previous


# --- Reading -----------------------------------------------------------------------------


def statuses_queryset(repo: Repository, sha: str) -> QuerySet[CommitStatus]:
    """The latest status per context of one commit (a full id), by context: a report replaces
    its context's row, so every row is the latest."""
    return CommitStatus.objects.filter(repository=repo, sha=sha).order_by("context", "pk")


def statuses_for(repo: Repository, sha: str) -> list[CommitStatus]:
    return list(statuses_queryset(repo, sha).select_related("creator"))


def combined(repo: Repository, sha: str) -> Combined:
    rows = statuses_for(repo, sha)
    return Combined(sha, combined_state(r.state for r in rows), tuple(rows))


def combined_many(repo: Repository, shas: Iterable[str]) -> dict[str, Combined]:
    """Combined statuses of many commits in one query (the Work page's heads). Commits with no
    status are left out."""
    wanted = sorted({s for s in shas if s})
    if not wanted:
        return {}
    grouped: dict[str, list[CommitStatus]] = defaultdict(list)
    for row in CommitStatus.objects.filter(repository=repo, sha__in=wanted).order_by("sha", "context"):
        grouped[row.sha].append(row)
    return {
        sha: Combined(sha, combined_state(r.state for r in rows), tuple(rows))
        for sha, rows in grouped.items()
    }
