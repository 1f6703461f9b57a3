"""What the Work view shows: unfinished work in workspaces, attached to the canonical history.

Five git processes for a whole view, however many heads and refs:

1. ``for-each-ref`` over branches and workspace refs (heads, their dates), and one over tag
   names only (asking a tag's type or date reads its object: 1,000 tags cost 40 ms);
2. ``rev-list --boundary --parents --timestamp <heads> --not --branches --tags``: the draft
   commits (reachable from the selected heads, from no canonical ref) and, as the walk's
   boundary, their bases, with parents and dates (the commit-graph's data: no object read);
3. ``rev-list --first-parent <branch tips> --not <oldest shown base>^@``: the branches'
   first-parent lines (the default branch's first; another branch's line ends where it meets
   one already drawn), so each shown public commit has one place, and the history between two
   of them collapses into one edge counting the commits skipped along the lines (a merge
   counts as one, as in `git log --first-parent`). Branches whose tips are older than the
   oldest base get no line (showwork.lines.read_lines: walking from them walked the whole
   history);
4. ``log --no-walk`` over the commits shown (after the cap): git's shortest unique
   abbreviation (``%h`` with ``--abbrev=4``: unique among all objects), subjects, authors.

A public commit off every first-parent line (inside a merged side branch) is placed by one
``name-rev`` over just those commits, by the length of its name's path.

Measured on a 200,000-commit history with 1,000 heads (bench/showwork.py): a per-(tip, base)
``rev-list --count`` costs a process each (900 bases: seconds); ``name-rev`` for all bases
cost 180 ms where the first-parent rev-list costs 50 ms; subjects and authors in the draft walk
cost 40 ms for 5,000 commits of which the cap shows 500. Step 2 walks down to the oldest
base of all; step 3 only to the oldest base of the stacks the cap keeps (with a branch filter,
of all: it asks where every base lies). Reading the lines in a thread while git walks the
drafts was slower on two cores (the lines' 4 MB of output is parsed under the GIL), so those
two run one after the other; the small ones run beside them (the tag names beside the other
for-each-ref, the description of the shown commits beside the lines).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

from django.urls import reverse

from repos.hooks import refspace
from repos.models import Repository
from repos.visibility import view_for
from reviews.models import Proposal, ProposalState
from showwork import prefixes, reading
from showwork.lines import Lines, name_rev, public_edges, read_lines
from showwork.model import Graph, GraphNode
from showwork.reading import Head, read_refs, walk_drafts

DEFAULT_SINCE = timedelta(days=30)
DEFAULT_CAP = 500


def hidden_owners(viewer, repo: Repository) -> frozenset[str]:
    """Owners of the workspaces this viewer may not see (the one rule: repos.visibility):
    their heads are left out of the graph, and the cache keys on them."""
    hidden = view_for(repo, viewer).hidden_ref_prefixes()
    return frozenset(p.split("/")[2] for p in hidden if p.startswith(refspace.WORKSPACES))


def _target_branch(head: Head, branches: dict[str, str]) -> str | None:
    return refspace.nameless_branch(head.ref, branches)


def select(
    repo: Repository,
    *,
    viewer,
    user: str | None = None,
    branch: str | None = None,
    since: timedelta | None = DEFAULT_SINCE,
    cap: int = DEFAULT_CAP,
    now: int | None = None,
) -> Graph:
    """The Work graph of one repository as this viewer may see it. `since=None` shows older
    heads too; `user` keeps one workspace ("my work"); `branch` keeps heads whose base is on
    that branch (or nameless heads pushed for it)."""
    return select_with_branches(repo, viewer=viewer, user=user, branch=branch, since=since, cap=cap, now=now)[
        0
    ]


def select_with_branches(
    repo: Repository,
    *,
    viewer,
    user: str | None = None,
    branch: str | None = None,
    since: timedelta | None = DEFAULT_SINCE,
    cap: int = DEFAULT_CAP,
    now: int | None = None,
) -> tuple[Graph, list[str]]:
    """select(), and the branch names it read (for the page's branch filter)."""
    now = int(time.time()) if now is None else now
    refs = read_refs(repo, user)
    hidden = hidden_owners(viewer, repo)
    cutoff = None if since is None else now - int(since.total_seconds())
    heads = [h for h in refs.heads if h.owner not in hidden and (cutoff is None or h.when >= cutoff)]
    if branch is not None and branch not in refs.branches:
        heads = []

    drafts, bases = walk_drafts(repo, heads)
    heads = [h for h in heads if h.sha in drafts]  # the others are merged into canonical refs

    # Each head's stack: its drafts, down to the bases.
    heads.sort(key=lambda h: (-h.when, h.ref))
    stacks: dict[str, list[str]] = {}
    for head in heads:
        if head.sha in stacks:
            continue
        seen, todo = [], [head.sha]
        visited = {head.sha}
        while todo:
            sha = todo.pop()
            seen.append(sha)
            for parent in drafts[sha].parents:
                if parent in drafts and parent not in visited:
                    visited.add(parent)
                    todo.append(parent)
        stacks[head.sha] = seen

    def lines_down_to(among: set[str]) -> Lines:
        oldest = min((bases[sha] for sha in among), key=lambda c: (c.when, c.sha)) if among else None
        return read_lines(
            repo,
            refs.branches,
            repo.default_branch,
            oldest.sha if oldest else None,
            dates=refs.branch_dates,
            stop_date=oldest.when if oldest else None,
        )

    lines: Lines | None = None
    if branch is not None:
        # The filter asks where every base lies, so the lines go down to the oldest of all.
        lines = lines_down_to(set(bases))
        reach = lines.segments(branch)
        on_branch = set()
        for sha in bases:
            at = lines.where.get(sha)
            if at is not None and at[0] in reach and at[1] >= reach[at[0]]:
                on_branch.add(sha)
        off = sorted(sha for sha in bases if sha not in lines.where)
        if off:
            on_branch |= set(name_rev(repo, off, f"refs/heads/{branch}"))
        heads = [
            h
            for h in heads
            if _target_branch(h, refs.branches) == branch
            or any(p in on_branch for sha in stacks[h.sha] for p in drafts[sha].parents if p in bases)
        ]

    # The cap: newest heads first, whole stacks, until `cap` draft commits are shown.
    shown: set[str] = set()
    kept: list[Head] = []
    total = len({sha for h in heads for sha in stacks[h.sha]})
    for head in heads:
        new = [sha for sha in stacks[head.sha] if sha not in shown]
        if shown and len(shown) + len(new) > cap:
            break
        shown.update(new)
        kept.append(head)
    more = total - len(shown)

    owner_of: dict[str, str] = {}
    labels: dict[str, list[str]] = {}
    for head in kept:
        labels.setdefault(head.sha, []).append(head.label)
        for sha in stacks[head.sha]:
            owner_of.setdefault(sha, head.owner)
    used_bases = {p for sha in shown for p in drafts[sha].parents if p in bases}
    public_shown = used_bases | set(refs.branches.values())
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The shown commits' descriptions are asked of git while the lines are walked: two
        # processes on two cores, the GIL free while this thread waits on either.
        describing = pool.submit(reading.describe, repo, sorted(shown | public_shown))
        if lines is None:
            # Only the shown stacks' bases are placed: the lines need go no deeper than the
            # oldest of them. The oldest base of all (a head kept for weeks on a base 50,000
            # commits down) made git walk every line that far, most of the cold page's time.
            lines = lines_down_to(used_bases)
        described = describing.result()
    branch_labels: dict[str, list[str]] = {}
    for name, sha in sorted(refs.branches.items()):
        branch_labels.setdefault(sha, []).append(name)

    proposals = _proposal_urls(repo, kept)
    placed = {}
    for sha, (name, steps) in name_rev(repo, sorted(b for b in used_bases if b not in lines.where)).items():
        at = lines.place(name, steps)
        if at is not None:
            placed[sha] = at
    base_url = f"/{repo.owner.username}/{repo.name}/commit/"
    nodes: dict[str, GraphNode] = {}
    for sha in shown:
        c = described.get(sha) or drafts[sha]
        head_labels = tuple(sorted(labels.get(sha, ())))
        url = next(
            (
                proposals[refspace.WORKSPACES + label]
                for label in head_labels
                if refspace.WORKSPACES + label in proposals
            ),
            base_url + sha,
        )
        nodes[sha] = GraphNode(
            sha,
            tuple((p, 0) for p in c.parents if p in shown or p in used_bases),
            "draft",
            c.subject,
            c.author,
            c.when,
            owner=owner_of.get(sha, ""),
            labels=head_labels,
            url=url,
        )
    tips = set(refs.branches.values())
    for sha, edges in public_edges(public_shown, lines, placed).items():
        c = described.get(sha) or bases[sha]
        nodes[sha] = GraphNode(
            sha,
            edges,
            "tip" if sha in tips else "base",
            c.subject,
            c.author,
            c.when,
            labels=tuple(branch_labels.get(sha, ())),
            url=base_url + sha,
        )

    width = prefixes.common_width(
        [c.abbrev for c in described.values()], refs.branches, refs.tags, list(nodes)
    )
    ordered = topo_order({sha: replace(node, short=sha[:width]) for sha, node in nodes.items()})
    return Graph(ordered, more=more), sorted(refs.branches)


def _proposal_urls(repo: Repository, heads: list[Head]) -> dict[str, str]:
    refs = [h.ref for h in heads]
    if not refs:
        return {}
    rows = Proposal.objects.filter(
        repository=repo, state=ProposalState.OPEN, source_ref__in=refs
    ).values_list("source_ref", "number")
    return {
        ref: reverse("proposal", kwargs={"owner": repo.owner.username, "name": repo.name, "number": number})
        for ref, number in rows
    }


def topo_order(nodes: dict[str, GraphNode]) -> list[GraphNode]:
    """Children before parents, each stack of drafts just above its base (as smartlog draws
    it): built parents first, where after a commit its drafts come before the public line goes
    on (a LIFO of ready commits), then reversed. Newer stacks end up higher."""
    children: dict[str, list[GraphNode]] = {sha: [] for sha in nodes}
    waiting = {sha: 0 for sha in nodes}
    for node in nodes.values():
        for parent in {p for p, _count in node.parents if p in nodes}:
            waiting[node.sha] += 1
            children[parent].append(node)

    def later_first(group):
        # pushed in this order, so popped: public line last, then the oldest draft first
        return sorted(group, key=lambda n: (n.kind == "draft", -n.when, n.sha), reverse=False)

    ready = later_first([n for n in nodes.values() if waiting[n.sha] == 0])
    built: list[GraphNode] = []
    while ready:
        node = ready.pop()
        built.append(node)
        freed = []
        for child in children[node.sha]:
            waiting[child.sha] -= 1
            if waiting[child.sha] == 0:
                freed.append(child)
        ready.extend(later_first(freed))
    built.reverse()
    return built
