"""The proposals in one person's queue, for the dashboard: review requests for them, their own
open proposals with where each stands, and open proposals on repositories they maintain that
wait for their approval; and the open proposal of each workspace ref (workspaces.ref_links).

Only repositories the person may read count, and only proposals they may see there
(selectors.hidden_proposal_ids: hidden or taken-down work). Each section is capped; its total
is counted, so the page can say how many more there are. Where a proposal stands costs one
git process per repository shown (its branch tips), not one per proposal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery

from gitcore.gittools import ref_map
from repos.models import CommitStatus, Repository, Role
from repos.selectors import can_read
from repos.visibility import view_for
from reviews.models import (
    Approval,
    MergeCheck,
    Proposal,
    ProposalRevision,
    ProposalState,
    ReviewRequest,
    Thread,
)
from reviews.selectors import hidden_proposal_ids

SECTION_CAP = 20


@dataclass
class Section:
    items: list = field(default_factory=list)
    total: int = 0

    @property
    def more(self) -> int:
        return self.total - len(self.items)


@dataclass(frozen=True)
class Standing:
    """Where an open proposal stands: approvals of its current head, whether it merges (the
    cached MergeCheck, when it is for the current pair of tips), open threads, checks."""

    proposal: Proposal
    head: str
    approvals: int
    merge: str  # clean, behind, conflicts, error, unknown (not checked for these tips yet)
    behind: int
    unresolved: int
    checks: str  # success, failure, pending, or "" (no status reported)


class Readable:
    """One viewer's answers per repository, asked once each: may they read it, and which of
    its proposals are hidden from them."""

    def __init__(self, user):
        self.user = user
        self._hidden: dict[int, set[int] | None] = {}

    def hidden(self, repo: Repository) -> set[int] | None:
        """The proposal ids hidden from the viewer; None when they may not read the repository."""
        if repo.pk not in self._hidden:
            readable = repo.deleted_at is None and can_read(self.user, repo)
            self._hidden[repo.pk] = hidden_proposal_ids(repo, view_for(repo, self.user)) if readable else None
        return self._hidden[repo.pk]

    def visible(self, proposal: Proposal) -> bool:
        hidden = self.hidden(proposal.repository)
        return hidden is not None and proposal.pk not in hidden


def _with_head(qs: QuerySet[Proposal]) -> QuerySet[Proposal]:
    latest = ProposalRevision.objects.filter(proposal=OuterRef("pk")).order_by("-number")
    return qs.annotate(head=Subquery(latest.values("head_sha")[:1])).select_related(
        "repository__owner", "author"
    )


def _section(rows, readable: Readable, key=lambda row: row) -> Section:
    section = Section()
    for row in rows:
        if readable.visible(key(row)):
            section.total += 1
            if len(section.items) < SECTION_CAP:
                section.items.append(row)
    return section


def review_requests(user, readable: Readable) -> Section:
    """Reviews asked of the user on open proposals, newest request first."""
    rows = (
        ReviewRequest.objects.filter(user=user, proposal__state=ProposalState.OPEN)
        .exclude(proposal__author=user)
        .select_related("proposal__repository__owner", "proposal__author", "requested_by")
        .order_by("-created_at", "-pk")
    )
    return _section(rows.iterator(), readable, key=lambda r: r.proposal)


def own_open(user, readable: Readable) -> Section:
    rows = _with_head(Proposal.objects.filter(author=user, state=ProposalState.OPEN)).order_by("-updated_at")
    section = _section(rows.iterator(), readable)
    section.items = standings(section.items)
    return section


def maintained_repository_ids(user) -> list[int]:
    member = Q(memberships__user=user, memberships__role__gte=Role.MAINTAINER)
    return list(
        Repository.objects.filter(Q(owner=user) | member, deleted_at__isnull=True)
        .values_list("pk", flat=True)
        .distinct()
    )


def awaiting(user, readable: Readable) -> Section:
    """Open proposals by others on repositories the user maintains (or administers) that have
    no approval from them of their current head, oldest first (they have waited longest)."""
    mine = Approval.objects.filter(proposal=OuterRef("pk"), user=user, head_sha=OuterRef("head"))
    rows = (
        _with_head(
            Proposal.objects.filter(
                repository_id__in=maintained_repository_ids(user), state=ProposalState.OPEN
            ).exclude(author=user)
        )
        .annotate(approved=Exists(mine))
        .filter(approved=False)
        .order_by("created_at", "pk")
    )
    section = _section(rows.iterator(), readable)
    section.items = standings(section.items)
    return section


def _combined(states: set[str]) -> str:
    if not states:
        return ""
    if states & {"failure", "error"}:
        return "failure"
    return "pending" if "pending" in states else "success"


def standings(proposals: list[Proposal]) -> list[Standing]:
    """Where each proposal (annotated with `head`, _with_head) stands: a few queries for all of
    them, and one git process per repository for its branch tips."""
    if not proposals:
        return []
    ids = [p.pk for p in proposals]
    heads = {p.pk: getattr(p, "head", None) or "" for p in proposals}  # the annotation
    approvals: dict[int, int] = {}
    for pk, head in Approval.objects.filter(proposal_id__in=ids).values_list("proposal_id", "head_sha"):
        if head == heads[pk]:
            approvals[pk] = approvals.get(pk, 0) + 1
    unresolved: dict[int, int] = {}
    for pk in Thread.objects.filter(proposal_id__in=ids, resolved_at__isnull=True).values_list(
        "proposal_id", flat=True
    ):
        unresolved[pk] = unresolved.get(pk, 0) + 1
    checks = {c.proposal_id: c for c in MergeCheck.objects.filter(proposal_id__in=ids)}
    statuses: dict[tuple[int, str], set[str]] = {}
    for repo_id, sha, state in CommitStatus.objects.filter(
        repository_id__in={p.repository_id for p in proposals}, sha__in=set(heads.values()) - {""}
    ).values_list("repository_id", "sha", "state"):
        statuses.setdefault((repo_id, sha), set()).add(state)
    tips: dict[int, dict[str, str]] = {}
    for p in proposals:
        if p.repository_id not in tips:
            tips[p.repository_id] = ref_map(p.repository.disk_path, "refs/heads/")
    out = []
    for p in proposals:
        check = checks.get(p.pk)
        target = tips[p.repository_id].get(f"refs/heads/{p.target_branch}")
        if check is not None and (check.head_sha, check.target_sha) != (heads[p.pk], target):
            check = None  # computed for other tips: not known for these yet
        merge = "unknown"
        if check is not None:
            merge = "behind" if check.state == MergeCheck.State.CLEAN and check.behind else check.state
        out.append(
            Standing(
                proposal=p,
                head=heads[p.pk],
                approvals=approvals.get(p.pk, 0),
                merge=merge,
                behind=check.behind if check is not None else 0,
                unresolved=unresolved.get(p.pk, 0),
                checks=_combined(statuses.get((p.repository_id, heads[p.pk]), set())),
            )
        )
    return out


def open_proposal_numbers(repo: Repository, viewer, refs: list[str]) -> dict[str, int]:
    """ref -> number of its open proposal, among those the viewer may see (workspaces.ref_links)."""
    rows = Proposal.objects.filter(repository=repo, state=ProposalState.OPEN, source_ref__in=refs)
    found = dict(rows.values_list("source_ref", "number"))
    if found:
        hidden = hidden_proposal_ids(repo, view_for(repo, viewer))
        if hidden:
            shown = set(rows.exclude(pk__in=hidden).values_list("source_ref", flat=True))
            found = {ref: n for ref, n in found.items() if ref in shown}
    return found
