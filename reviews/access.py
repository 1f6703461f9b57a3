"""Reviews' git access backend (repos.gitaccess), named in settings.GIT_ACCESS_BACKENDS as
reviews.access.ReviewAccess: what post-receive needs to tell a pusher what to do next (the
workspace page, the proposal to open or the one their push updated), computed here because
the hook never reaches the database."""

from __future__ import annotations

from django.db.models import OuterRef, Subquery

from gitcore.git import GitError, run_git
from gitcore.gittools import is_ancestor, is_zero
from gitcore.oids import object_format
from repos.gitaccess import BaseGitAccess, GitRequest
from repos.hooks import refspace
from repos.siteurl import repository_url
from reviews.models import Proposal, ProposalRevision, ProposalState
from workspaces.selectors import workspace_settings

WRITERS = ("maintainer", "admin")
# Open proposals of a pusher's workspace passed to the hook for a nameless push, whose ref
# names only proc-receive learns: the newest ones (for a ref beyond them the hook offers to
# open a proposal, and the form then says the ref is already proposed).
MAX_PROPOSALS = 200
# Tips checked for being on the default branch already (one git process each, and only for
# tips the repository holds before the push: new work never is on the branch).
MAX_LANDED_CHECKS = 8


def lands_in_workspace(req: GitRequest) -> bool:
    """Whether any command can create or move a ref in the pusher's own workspace: a direct
    push there, a nameless push, or (for those who may not write branches) a branch push that
    proc-receive maps to the workspace."""
    if req.user is None:
        return False
    own = refspace.workspace_prefix(req.user.username)
    prefixes: tuple[str, ...] = (own, refspace.FOR)
    if req.role not in WRITERS:
        prefixes += ("refs/heads/",)
    return any(ref.startswith(prefixes) for _old, _new, ref in req.commands)


def proposals_env(req: GitRequest, username: str) -> str:
    """`<number> <latest revision> <its head> <source ref>` lines of the open proposals this
    push may move."""
    own = refspace.workspace_prefix(username)
    exact = set()
    nameless = False
    for _old, _new, ref in req.commands:
        if ref.startswith(own):
            exact.add(ref)
        elif ref.startswith("refs/heads/") and req.role not in WRITERS:
            exact.add(own + ref[len("refs/heads/") :])
        elif ref.startswith(refspace.FOR):
            nameless = True
    rows = Proposal.objects.filter(repository=req.repository, state=ProposalState.OPEN)
    rows = rows.filter(source_ref__startswith=own) if nameless else rows.filter(source_ref__in=exact)
    latest = ProposalRevision.objects.filter(proposal=OuterRef("pk")).order_by("-number")
    rows = rows.annotate(
        revision=Subquery(latest.values("number")[:1]), head=Subquery(latest.values("head_sha")[:1])
    )
    return "\n".join(
        f"{number} {revision or 0} {head or '-'} {ref}"
        for number, revision, head, ref in rows.order_by("-number").values_list(
            "number", "revision", "head", "source_ref"
        )[:MAX_PROPOSALS]
    )


def already_landed(req: GitRequest, username: str) -> str:
    """The new tips of this push's own-workspace commands (direct, or branch pushes mapped to the
    workspace) that the default branch already has, one per line: a `main` copy, say, which
    post-receive then calls stale instead of offering a proposal for it. Known before git
    runs, because such a commit is in the repository already: one cat-file for all tips, then
    an ancestry check for the few the repository holds. (Nameless pushes of such a tip are
    refused by proc-receive.)"""
    own = refspace.workspace_prefix(username)
    mapped = req.role not in WRITERS
    fmt = object_format(req.repository.disk_path)
    tips = sorted(
        {
            oid
            for _old, new, ref in req.commands
            if (ref.startswith(own) or (mapped and ref.startswith("refs/heads/")))
            and not is_zero(new)
            and (oid := fmt.parse(new))
        }
    )
    if not tips:
        return ""
    path = req.repository.disk_path
    branch = f"refs/heads/{req.repository.default_branch}"
    try:
        out = run_git(
            ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
            repo=path,
            input="".join(f"{tip}\n" for tip in tips).encode(),
        ).text
    except GitError:
        return ""
    held = [line.split()[0] for line in out.splitlines() if line.endswith(" commit")]
    return "\n".join(tip for tip in held[:MAX_LANDED_CHECKS] if is_ancestor(path, tip, branch))


def mapped_branches(req: GitRequest) -> int:
    """How many branch pushes proc-receive maps to the workspace (it prints a line for each)."""
    branches = sum(1 for _old, _new, ref in req.commands if ref.startswith("refs/heads/"))
    if not branches or req.role in WRITERS:
        return 0
    return branches if workspace_settings(req.repository).branch_pushes_to_workspace else 0


class ReviewAccess(BaseGitAccess):
    def hook_env(self, req: GitRequest) -> dict[str, str]:
        env = {}
        repo = req.repository
        base = repository_url(repo, req.client)
        if any(ref.startswith(refspace.FOR) for _old, _new, ref in req.commands):
            # What post-receive prints to a push that carried options (git shows it as `remote:`).
            listed = f"{base}/proposals" if base else f"/{repo.owner.username}/{repo.name}/proposals"
            env["HOSTSITE_PUSH_OPTIONS_NOTICE"] = f"proposals opened with -o title=... are listed at {listed}"
        # Only a push over HTTP has a terminal to print to (web merges and edits judge their
        # updates with the same hook environment, and have no client).
        if base and req.client is not None and req.user is not None and lands_in_workspace(req):
            env["HOSTSITE_NEXT_URL"] = base
            env["HOSTSITE_NEXT_BRANCH"] = repo.default_branch
            env["HOSTSITE_NEXT_PROPOSALS"] = proposals_env(req, req.user.username)
            env["HOSTSITE_NEXT_MAPPED"] = str(mapped_branches(req))
            env["HOSTSITE_NEXT_LANDED"] = already_landed(req, req.user.username)
        return env
