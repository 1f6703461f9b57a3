"""Rows found by an engine, as hits for the page and the API: loaded in the engine's order,
filtered once more by the viewer's View of each repository (what moderation hides), with
their matching lines and escaped, `<mark>`ed snippets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from repos.models import Repository
from repos.visibility import view_for
from reviews.models import Proposal
from reviews.selectors import hidden_proposal_ids
from search.models import CodeFile, CommitEntry, IndexState, RepositoryEntry, UserEntry
from search.query import Query

LINES_PER_FILE = 3
LINE_CHARS = 300


@dataclass
class Line:
    number: int
    text: str
    html: SafeString


@dataclass
class Hit:
    kind: str
    url: str
    title: str
    title_html: SafeString
    repository: str = ""
    # The page without a line anchor (code: each matching line links to base_url#L<n>).
    base_url: str = ""
    detail: str = ""
    detail_html: SafeString = field(default_factory=lambda: mark_safe(""))
    lines: list[Line] = field(default_factory=list)
    # Fields of the kind for the API (path, sha, number, author...).
    data: dict = field(default_factory=dict)


def build(kind: str, ids: list, query: Query, user) -> list[Hit]:
    return _BUILDERS[kind](ids, query, user) if ids else []


def _ordered(rows, ids: list, key: str) -> list:
    by_id = {getattr(row, key): row for row in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


def _repo_url(repo: Repository) -> str:
    return reverse("repository", args=[repo.owner.username, repo.name])


def _code(ids, query, user) -> list[Hit]:
    rows = _ordered(CodeFile.objects.filter(pk__in=ids).select_related("repository__owner"), ids, "pk")
    commits = dict(
        IndexState.objects.filter(repository_id__in={row.repository_id for row in rows}).values_list(
            "repository_id", "code_commit"
        )
    )
    hits = []
    for row in rows:
        repo = row.repository
        commit = commits.get(row.repository_id) or repo.default_branch
        base = reverse("repo-blob", args=[repo.owner.username, repo.name, commit]) + "/" + row.path_url
        lines = matching_lines(row.content, query)
        hits.append(
            Hit(
                kind="code",
                url=base + (f"#L{lines[0].number}" if lines else ""),
                base_url=base,
                title=row.path,
                title_html=mark(row.path, query),
                repository=repo.full_name,
                lines=lines,
                data={"path": row.path, "blob": row.blob, "commit": commit},
            )
        )
    return hits


def _commits(ids, query, user) -> list[Hit]:
    rows = _ordered(CommitEntry.objects.filter(pk__in=ids).select_related("repository__owner"), ids, "pk")
    hidden: set[str] = set()
    for repo in {row.repository for row in rows}:
        view = view_for(repo, user)
        if view.restricts:
            hidden |= view.hidden_objects(row.sha for row in rows if row.repository_id == repo.pk)
    hits = []
    for row in rows:
        if row.sha in hidden:
            continue
        repo = row.repository
        subject = row.message.split("\n", 1)[0]
        hits.append(
            Hit(
                kind="commits",
                url=reverse("repo-commit", args=[repo.owner.username, repo.name, row.sha]),
                title=subject,
                title_html=mark(subject, query, words=True),
                repository=repo.full_name,
                detail=f"{row.sha[:12]} · {row.author_name} <{row.author_email}>",
                detail_html=mark(
                    f"{row.sha[:12]} · {row.author_name} <{row.author_email}>", query, words=True
                ),
                data={
                    "sha": row.sha,
                    "message": row.message,
                    "author_name": row.author_name,
                    "author_email": row.author_email,
                    "committed_at": row.committed_at,
                },
            )
        )
    return hits


def _repositories(ids, query, user) -> list[Hit]:
    rows = _ordered(RepositoryEntry.objects.filter(pk__in=ids).select_related("repository__owner"), ids, "pk")
    return [
        Hit(
            kind="repositories",
            url=_repo_url(row.repository),
            title=row.repository.full_name,
            title_html=mark(row.repository.full_name, query, words=True),
            repository=row.repository.full_name,
            detail=row.description,
            detail_html=mark(row.description, query, words=True),
            data={"description": row.description, "visibility": row.repository.visibility},
        )
        for row in rows
    ]


def _proposals(ids, query, user) -> list[Hit]:
    proposals = Proposal.objects.filter(pk__in=ids).select_related("repository__owner", "author")
    rows = _ordered(proposals, ids, "pk")
    hidden: set[int] = set()
    for repo in {row.repository for row in rows}:
        hidden |= hidden_proposal_ids(repo, view_for(repo, user))
    return [
        Hit(
            kind="proposals",
            url=reverse("proposal", args=[p.repository.owner.username, p.repository.name, p.number]),
            title=p.title,
            title_html=mark(p.title, query, words=True),
            repository=p.repository.full_name,
            detail=f"#{p.number} by {p.author.username} · {p.state}",
            detail_html=escape(f"#{p.number} by {p.author.username} · {p.state}"),
            data={"number": p.number, "state": p.state, "author": p.author.username},
        )
        for p in rows
        if p.pk not in hidden
    ]


def _users(ids, query, user) -> list[Hit]:
    rows = _ordered(UserEntry.objects.filter(pk__in=ids), ids, "pk")
    return [
        Hit(
            kind="users",
            url=reverse("profile", args=[row.username]),
            title=row.username,
            title_html=mark(row.username, query, words=True),
            detail=row.display_name,
            detail_html=mark(row.display_name, query, words=True),
            data={"username": row.username, "display_name": row.display_name},
        )
        for row in rows
    ]


_BUILDERS = {
    "code": _code,
    "commits": _commits,
    "repositories": _repositories,
    "proposals": _proposals,
    "users": _users,
}


def _pattern(query: Query, *, words: bool = False) -> re.Pattern | None:
    """What to highlight: the literal (any case), each word of a prose search, or the regular
    expression as Python reads it (None if it reads it differently)."""
    if query.regex:
        try:
            return re.compile(query.text)
        except re.error:
            return None
    parts = query.terms if words else (query.text,)
    return re.compile(
        "|".join(re.escape(part) for part in sorted(parts, key=len, reverse=True)), re.IGNORECASE
    )


def mark(text: str, query: Query, *, words: bool = False) -> SafeString:
    """`text` escaped, with each match of the query in <mark>."""
    pattern = _pattern(query, words=words)
    if pattern is None or not text:
        return escape(text)
    out: list[str] = []
    pos = 0
    for match in pattern.finditer(text):
        if match.end() == match.start():
            continue
        out.append(escape(text[pos : match.start()]))
        out.append(f"<mark>{escape(match.group())}</mark>")
        pos = match.end()
    out.append(escape(text[pos:]))
    return mark_safe("".join(out))  # noqa: S308 - every piece is escaped above


def matching_lines(content: str, query: Query) -> list[Line]:
    pattern = _pattern(query)
    if pattern is None:
        return []
    found = []
    # Split on newlines only, as the blob page numbers its lines.
    for number, line in enumerate(content.split("\n"), start=1):
        if pattern.search(line):
            text = line[:LINE_CHARS]
            found.append(Line(number=number, text=text, html=mark(text, query)))
            if len(found) >= LINES_PER_FILE:
                break
    return found
