"""The pushlog, queried and shaped like hg.mozilla.org's json-pushes.

Parameters (hg.mozilla.org "Pushlog" docs): startID/endID (pushes with startID < id <= endID),
startdate/enddate, fromchange/tochange (after the push containing fromchange, through the one
containing tochange), changeset (the push containing it), user (the pusher's username),
tipsonly, full, version=1|2; and hostsite's own: ref (pushes that moved this ref: a full name,
or a branch or tag name) and workspaces=0 (no pushes to workspaces). Without a range, the last
10 pushes. At most PAGE_MAX pushes per response, oldest first; version 2's lastpushid lets a
client page on with startID.

The pushlog is a view over the replication log (repos.changelog): a push is listed through
its log row, and shows that row's `generation` (the repository's change number: a replica that
holds it holds the push).

Every exit of the pushlog (json-pushes, the Atom feed, the API, webhooks) shows a push as one
viewer may see it (repos.visibility): ref updates on refs the viewer may not see, or to or
from hidden objects, and commits that are hidden objects are left out, and a push left with
nothing is left out entirely, as if it had never been recorded (PushFilter).
"""

from __future__ import annotations

import re
from typing import Any

from django.db.models import F, Max, Q, QuerySet

from gitcore.git import run_git
from gitcore.gittools import list_refs, text_refname
from repos.models import Push, PushCommit, RefUpdate, Repository
from repos.pushlog_query import DEFAULT_COUNT, PAGE_MAX, PushlogQueryError, Query, ref_names
from repos.visibility import EVERYTHING, View

_ZERO = re.compile(r"^0+$")
_CHUNK = 500


class PushFilter:
    """What of the pushlog one viewer may see."""

    def __init__(self, repo: Repository, view: View = EVERYTHING):
        self.repo = repo
        self.view = view
        self._hidden_ids: set[int] | None = None

    def ref_shown(self, ref: str, old: str, new: str) -> bool:
        if not self.view.restricts:
            return True
        oids = {oid for oid in (old, new) if oid and not _ZERO.match(oid)}
        return self.view.ref_visible(ref) and not self.view.hidden_objects(oids)

    def refs(self, updates):
        """The updates (RefUpdate rows, or dicts with ref/old/new) the viewer may see."""

        def get(u, key):
            return u[key] if isinstance(u, dict) else getattr(u, key)

        return [u for u in updates if self.ref_shown(get(u, "ref"), get(u, "old"), get(u, "new"))]

    def shas(self, shas: list[str]) -> list[str]:
        if not self.view.restricts:
            return list(shas)
        hidden = self.view.hidden_objects(shas)
        return [sha for sha in shas if sha not in hidden]

    def hidden_ids(self) -> set[int]:
        """The repository's pushes with nothing left to show this viewer. Only pushes that moved
        a ref under a hidden prefix or brought a hidden commit can be such: those are found
        by their refs and by the hidden objects, never by reading the whole pushlog."""
        if self._hidden_ids is not None:
            return self._hidden_ids
        self._hidden_ids = set()
        if not self.view.restricts:
            return self._hidden_ids
        under = Q()
        for prefix in self.view.hidden_ref_prefixes():
            under |= Q(ref__startswith=prefix)
        candidates = set()
        if under:
            candidates |= set(
                RefUpdate.objects.filter(under, push__repository=self.repo).values_list("push_id", flat=True)
            )
        candidates |= self._pushes_with_hidden_commits()
        for push in Push.objects.filter(pk__in=candidates).prefetch_related("ref_updates", "commits"):
            if not self.refs(push.ref_updates.all()) and not self.shas([c.sha for c in push.commits.all()]):
                self._hidden_ids.add(push.pk)
        return self._hidden_ids

    def _pushes_with_hidden_commits(self) -> set[int]:
        # The hidden set of a moderated view is small next to the history: look its commits up.
        rows = PushCommit.objects.filter(repository=self.repo)
        ordered = sorted(self.view.hidden_set())
        found: set[int] = set()
        for i in range(0, len(ordered), _CHUNK):
            found |= set(rows.filter(sha__in=ordered[i : i + _CHUNK]).values_list("push_id", flat=True))
        return found

    def visible(self, qs: QuerySet[Push]) -> QuerySet[Push]:
        hidden = self.hidden_ids()
        return qs.exclude(pk__in=hidden) if hidden else qs


def logged_pushes(repo: Repository) -> QuerySet[Push]:
    """The repository's pushes as the replication log lists them, each annotated with its
    `generation` (one join, no query per push)."""
    return Push.objects.filter(repository=repo, change__isnull=False).annotate(
        generation=F("change__generation")
    )


def _push_of(repo: Repository, sha: str, shown: PushFilter) -> int:
    """The id of the push that introduced this commit (a unique prefix is enough). Commits the
    viewer may not see are not there: unknown, not ambiguous."""
    rows = list(
        PushCommit.objects.filter(repository=repo, sha__startswith=sha).values_list("push_id", "sha")[:100]
    )
    visible = set(shown.shas([commit for _push, commit in rows]))
    pushes = {push for push, commit in rows if commit in visible} - shown.hidden_ids()
    if not pushes:
        raise PushlogQueryError(f"unknown changeset {sha}")
    if len(pushes) > 1:
        raise PushlogQueryError(f"ambiguous changeset prefix {sha}")
    return pushes.pop()


def filter_pushes(repo: Repository, query: Query, shown: PushFilter) -> QuerySet[Push]:
    """The pushes the query's filters and ranges keep, in no order and uncapped."""
    qs = shown.visible(logged_pushes(repo))
    if not query.workspaces:
        qs = qs.filter(touches_workspace=False)
    if query.user:
        qs = qs.filter(pusher_name__iexact=query.user)
    if query.ref:
        names = ref_names(query.ref)
        if not any(shown.view.ref_visible(name) for name in names) and shown.view.restricts:
            return qs.none()  # a hidden ref names no push, as a missing one does
        qs = qs.filter(
            pk__in=RefUpdate.objects.filter(push__repository=repo, ref__in=names).values("push_id")
        )
    if query.changeset:
        qs = qs.filter(pk=_push_of(repo, query.changeset, shown))
    if query.start_id is not None:
        qs = qs.filter(pk__gt=query.start_id)
    if query.end_id is not None:
        qs = qs.filter(pk__lte=query.end_id)
    if query.from_change:
        qs = qs.filter(pk__gt=_push_of(repo, query.from_change, shown))
    if query.to_change:
        qs = qs.filter(pk__lte=_push_of(repo, query.to_change, shown))
    if query.start_date:
        qs = qs.filter(created_at__gt=query.start_date)
    if query.end_date:
        qs = qs.filter(created_at__lt=query.end_date)
    return qs


def select_pushes(repo: Repository, query: Query, shown: PushFilter | None = None) -> QuerySet[Push]:
    shown = shown or PushFilter(repo)
    qs = filter_pushes(repo, query, shown)
    if not query.ranged:
        # hg: with no range, the most recent pushes.
        last = list(qs.order_by("-pk").values_list("pk", flat=True)[:DEFAULT_COUNT])
        qs = qs.filter(pk__in=last)
    return qs.order_by("pk")[:PAGE_MAX]


def _changeset_details(repo: Repository, shas: list[str]) -> dict[str, dict]:
    """author, desc, parents and files of each commit, in one git call per 200 commits."""
    details: dict[str, dict] = {}
    for i in range(0, len(shas), 200):
        batch = shas[i : i + 200]
        out = run_git(
            [
                "show",
                "--no-walk=unsorted",
                "--format=%x1e%H%x00%an <%ae>%x00%P%x00%B%x00",
                "--name-only",
                "--no-renames",
                "-m",
                "--first-parent",
                *batch,
                "--",
            ],
            repo=repo.disk_path,
        ).stdout.decode("utf-8", "replace")
        for record in out.split("\x1e")[1:]:
            sha, author, parents, rest = record.split("\x00", 3)
            desc, _, files = rest.rpartition("\x00")
            details[sha] = {
                "author": author,
                "desc": desc.rstrip("\n"),
                "parents": parents.split(),
                "files": [f for f in files.splitlines() if f],
            }
    return details


def _tags(repo: Repository, shas: set[str]) -> dict[str, list[str]]:
    tags: dict[str, list[str]] = {}
    for entry in list_refs(repo.disk_path, "refs/tags/"):
        target = entry.peeled or entry.oid
        if target in shas:
            tags.setdefault(target, []).append(text_refname(entry.name).removeprefix("refs/tags/"))
    return tags


def _branch(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


def render(repo: Repository, query: Query, view: View = EVERYTHING) -> dict:
    shown = PushFilter(repo, view)
    pushes = list(select_pushes(repo, query, shown).prefetch_related("commits", "ref_updates"))
    commits_by_push = {p.pk: shown.shas([c.sha for c in p.commits.all()]) for p in pushes}
    refs_by_push = {p.pk: shown.refs(p.ref_updates.all()) for p in pushes}
    if query.ref:
        # Only where the viewer may see the update: not a push whose move of it is hidden.
        names = ref_names(query.ref)
        pushes = [p for p in pushes if any(u.ref in names for u in refs_by_push[p.pk])]
    if query.tips_only:
        commits_by_push = {pk: shas[-1:] for pk, shas in commits_by_push.items()}
    details, tags = {}, {}
    if query.full:
        wanted = [sha for shas in commits_by_push.values() for sha in shas]
        details = _changeset_details(repo, wanted)
        tags = _tags(repo, set(wanted))
    entries = {}
    for push in pushes:
        shas = commits_by_push[push.pk]
        changesets: list[dict[str, Any]] | list[str]
        if query.full:
            branch = _branch(refs_by_push[push.pk][0].ref) if refs_by_push[push.pk] else ""
            changesets = [
                {
                    "author": details.get(sha, {}).get("author", ""),
                    "branch": branch,
                    "desc": details.get(sha, {}).get("desc", ""),
                    "files": details.get(sha, {}).get("files", []),
                    "node": sha,
                    "parents": details.get(sha, {}).get("parents", []),
                    "tags": tags.get(sha, []),
                }
                for sha in shas
            ]
        else:
            changesets = shas
        entries[str(push.pk)] = {
            "changesets": changesets,
            "date": int(push.created_at.timestamp()),
            "user": push.pusher_name,
            # hostsite additions, ignored by hg clients: which refs moved (forced: not a
            # fast-forward, e.g. a rewritten branch), and whether any of them is a workspace.
            "refs": [
                {"ref": u.ref, "old": u.old, "new": u.new, "forced": u.forced} for u in refs_by_push[push.pk]
            ],
            "workspace": push.touches_workspace,
            # The repository's change number in the replication log (repos.changelog).
            "generation": push.generation,  # type: ignore[attr-defined]  # logged_pushes annotates it
        }
    if query.version == 2:
        last = logged_pushes(repo).aggregate(m=Max("pk"))["m"] or 0
        return {"lastpushid": last, "pushes": entries}
    return entries
