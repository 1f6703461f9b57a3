"""What the Work view shows: unfinished work in workspaces, attached to the canonical history.

Four git processes for a whole view, however many heads (issue 7):

1. ``for-each-ref`` over branches, tags and workspace refs (heads, their dates);
2. ``log --boundary <heads> --not --branches --tags``: the draft commits (reachable from the
   selected heads, from no canonical ref) and, as the walk's boundary, their bases;
3. ``log --no-walk`` for the canonical branch tips;
4. ``name-rev --refs=refs/heads/*`` for the bases and tips: which branch each lies on and how
   many first-parent steps below its tip, so the public history between two shown public
   commits collapses into one edge whose count is the number of commits skipped on that line.

Measured on a 200,000-commit history with 1,000 heads (bench/showwork.py): a per-(tip, base)
``rev-list --count`` costs a process each (900 bases: seconds), and one ``rev-list --parents``
over the public region pipes every commit of it to Python; name-rev walks the same region
but prints one line per base. Steps 2 and 4 cost a walk down to the oldest base either way.
A merge on the line counts as one skipped commit (the first-parent view of `git log
--first-parent`); a base reached only through a merge's second parent is placed by the length
of its name-rev path.

Every abbreviated hash comes from git's own ``%h`` with ``--abbrev=4`` (the shortest prefix
unique among all objects of the repository); showwork.prefixes picks the view's one width.
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, replace
from datetime import timedelta

from django.urls import reverse

from repos.git import run_git
from repos.models import Repository, Role
from repos.selectors import role_for
from showwork import prefixes
from showwork.model import Graph, GraphNode
from workspaces.models import Workspace
from workspaces.selectors import INVISIBLE

DEFAULT_SINCE = timedelta(days=30)
DEFAULT_CAP = 500
FORMAT = "%m%H%x00%P%x00%h%x00%an%x00%ct%x00%s"
NAMELESS = re.compile(r"^refs/users/([^/]+)/(.+)/[0-9a-f]{12}$")
_NAME_REV = re.compile(r"^([0-9a-f]{40,64}) \((.*)\)$")


@dataclass(frozen=True)
class Head:
    ref: str
    sha: str
    when: int

    @property
    def owner(self) -> str:
        return self.ref.split("/", 3)[2]

    @property
    def label(self) -> str:
        return self.ref.removeprefix("refs/users/")


@dataclass
class _Commit:
    sha: str
    parents: tuple[str, ...]
    abbrev: str
    author: str
    when: int
    subject: str


@dataclass(frozen=True)
class RefState:
    branches: dict[str, str]  # name -> commit
    tags: frozenset[str]
    heads: list[Head]


def hidden_owners(viewer, repo: Repository) -> frozenset[str]:
    """Owners of hidden or taken-down workspaces this viewer may not see (one query)."""
    if viewer is not None and viewer.is_authenticated and viewer.is_staff:
        return frozenset()
    names = set(Workspace.objects.filter(repository=repo, state__in=INVISIBLE).values_list("user__username", flat=True))
    if not names or role_for(viewer, repo) == Role.ADMIN:
        return frozenset()
    if viewer is not None and viewer.is_authenticated:
        names.discard(viewer.username)
    return frozenset(names)


def read_refs(repo: Repository, user: str | None = None) -> RefState:
    prefixes_ = ["refs/heads/", "refs/tags/", f"refs/users/{user}/" if user else "refs/users/"]
    out = run_git(["for-each-ref", "--format=%(objecttype)%00%(refname)%00%(objectname)%00%(committerdate:unix)",
                   *prefixes_], repo=repo.disk_path).stdout.decode("utf-8", "surrogateescape")
    branches: dict[str, str] = {}
    tags: set[str] = set()
    heads: list[Head] = []
    for line in out.splitlines():
        kind, ref, sha, when = line.split("\0")
        if ref.startswith("refs/heads/"):
            if kind == "commit":
                branches[ref[len("refs/heads/"):]] = sha
        elif ref.startswith("refs/tags/"):
            tags.add(ref[len("refs/tags/"):])
        elif kind == "commit" and ref.count("/") >= 3:
            heads.append(Head(ref, sha, int(when or 0)))
    return RefState(branches, frozenset(tags), heads)


def parse_log(out: bytes) -> tuple[dict[str, _Commit], dict[str, _Commit]]:
    """(drafts, boundary) from `log --boundary --format=FORMAT`."""
    drafts: dict[str, _Commit] = {}
    boundary: dict[str, _Commit] = {}
    for line in out.decode("utf-8", "replace").split("\n"):
        if not line:
            continue
        mark, rest = line[0], line[1:]
        sha, parents, abbrev, author, when, subject = rest.split("\0", 5)
        commit = _Commit(sha, tuple(parents.split()), abbrev, author, int(when or 0), subject)
        (boundary if mark == "-" else drafts)[sha] = commit
    return drafts, boundary


def _positions(repo: Repository, shas: list[str], pattern: str = "refs/heads/*") -> dict[str, tuple[str, int]]:
    """sha -> (branch, steps below its tip) from one name-rev; commits on no branch are left out."""
    if not shas:
        return {}
    out = run_git(["name-rev", f"--refs={pattern}", "--annotate-stdin"], repo=repo.disk_path,
                  input="".join(s + "\n" for s in shas).encode()).stdout.decode("utf-8", "surrogateescape")
    found = {}
    for line in out.splitlines():
        match = _NAME_REV.match(line)
        if not match:
            continue
        name = match[2].removeprefix("heads/")
        branch = re.split(r"[~^]", name, maxsplit=1)[0]
        steps = 0
        for op, number in re.findall(r"([~^])(\d*)", name[len(branch):]):
            steps += int(number or 1) if op == "~" else 1
        found[match[1]] = (branch, steps)
    return found


def _target_branch(head: Head, branches: dict[str, str]) -> str | None:
    match = NAMELESS.match(head.ref)
    return match[2] if match and match[2] in branches else None


def select(repo: Repository, *, viewer, user: str | None = None, branch: str | None = None,
           since: timedelta | None = DEFAULT_SINCE, cap: int = DEFAULT_CAP, now: int | None = None) -> Graph:
    """The Work graph of one repository as this viewer may see it. `since=None` shows older
    heads too; `user` keeps one workspace ("my work"); `branch` keeps heads whose base is on
    that branch (or nameless heads pushed for it)."""
    now = int(time.time()) if now is None else now
    path = repo.disk_path
    refs = read_refs(repo, user)
    hidden = hidden_owners(viewer, repo)
    cutoff = None if since is None else now - int(since.total_seconds())
    heads = [h for h in refs.heads if h.owner not in hidden and (cutoff is None or h.when >= cutoff)]
    if branch is not None and branch not in refs.branches:
        heads = []

    drafts: dict[str, _Commit] = {}
    bases: dict[str, _Commit] = {}
    if heads:
        out = run_git(["log", "--boundary", f"--format={FORMAT}", "--abbrev=4", "--stdin",
                       "--not", "--branches", "--tags"], repo=path,
                      input="".join(sorted({h.sha + "\n" for h in heads})).encode()).stdout
        drafts, bases = parse_log(out)
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

    tips = _tips(repo, refs.branches)
    public = {**bases, **tips}
    positions = _positions(repo, sorted(public))

    if branch is not None:
        on_branch = set(_positions(repo, sorted(bases), f"refs/heads/{branch}"))
        heads = [h for h in heads if _target_branch(h, refs.branches) == branch
                 or any(p in on_branch for sha in stacks[h.sha] for p in drafts[sha].parents if p in bases)]

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
    branch_labels: dict[str, list[str]] = {}
    for name, sha in sorted(refs.branches.items()):
        branch_labels.setdefault(sha, []).append(name)

    proposals = _proposal_urls(repo, [h for h in kept])
    base_url = f"/{repo.owner.username}/{repo.name}/commit/"
    nodes: dict[str, GraphNode] = {}
    for sha in shown:
        c = drafts[sha]
        head_labels = tuple(sorted(labels.get(sha, ())))
        url = next((proposals[f"refs/users/{label}"] for label in head_labels
                    if f"refs/users/{label}" in proposals), base_url + sha)
        nodes[sha] = GraphNode(sha, tuple((p, 0) for p in c.parents if p in shown or p in used_bases), "draft",
                               c.subject, c.author, c.when, owner=owner_of.get(sha, ""), labels=head_labels,
                               url=url)
    public_shown = used_bases | set(tips)
    for sha, edges in _public_edges(public_shown, positions).items():
        c = public[sha]
        kind = "tip" if sha in tips else "base"
        nodes[sha] = GraphNode(sha, edges, kind, c.subject, c.author, c.when,
                               labels=tuple(branch_labels.get(sha, ())), url=base_url + sha)

    width = prefixes.common_width([(drafts.get(s) or public[s]).abbrev for s in nodes], refs.branches, refs.tags,
                                  list(nodes))
    ordered = topo_order({sha: replace(node, short=sha[:width]) for sha, node in nodes.items()})
    return Graph(ordered, more=more)


def _tips(repo: Repository, branches: dict[str, str]) -> dict[str, _Commit]:
    if not branches:
        return {}
    out = run_git(["log", "--no-walk", f"--format={FORMAT}", "--abbrev=4", "--stdin"], repo=repo.disk_path,
                  input="".join(sorted({s + "\n" for s in branches.values()})).encode()).stdout
    return parse_log(out)[0]


def _public_edges(shas: set[str], positions: dict[str, tuple[str, int]]) -> dict[str, tuple[tuple[str, int], ...]]:
    """Public commits joined along each branch's line: each to the next one below it, with the
    number of commits skipped in between."""
    lines: dict[str, list[tuple[int, str]]] = {}
    for sha in shas:
        if sha in positions:
            name, steps = positions[sha]
            lines.setdefault(name, []).append((steps, sha))
    edges: dict[str, tuple[tuple[str, int], ...]] = {sha: () for sha in shas}
    for line in lines.values():
        line.sort()
        for (steps, sha), (below_steps, below) in itertools.pairwise(line):
            edges[sha] = ((below, below_steps - steps - 1),)
    return edges


def _proposal_urls(repo: Repository, heads: list[Head]) -> dict[str, str]:
    from reviews.models import Proposal, ProposalState

    refs = [h.ref for h in heads]
    if not refs:
        return {}
    rows = Proposal.objects.filter(repository=repo, state=ProposalState.OPEN, source_ref__in=refs).values_list(
        "source_ref", "number")
    return {ref: reverse("proposal", kwargs={"owner": repo.owner.username, "name": repo.name, "number": number})
            for ref, number in rows}


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
