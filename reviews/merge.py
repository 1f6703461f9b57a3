"""Merging a proposal into its target branch, without a working tree.

Every strategy builds objects only: `git merge-tree --write-tree` computes the merged tree (ort,
with rename detection) and `git commit-tree` writes the commit. The target branch then moves by
compare-and-swap, `git update-ref <ref> <new> <expected-old>`, under the repository's lock, so a
push that lands meanwhile is never overwritten: git refuses the swap, the merge is computed
once more on top of the pushed commit, and if the branch moved again it fails with
"target moved" (409) and nothing changes. A merge is recorded as a push (protocol "web"), so the
pushlog, webhooks and post-push work see it as they see any push.

Rebase needs a three-way merge with a chosen base (commit C replayed onto T has base C^),
which `merge-tree --merge-base` gives only from git 2.40. On older git (2.38, 2.39) we give
merge-tree two scaffolding commits, tree(T) and tree(C), each with the single parent C^: their
only merge base is C^, so merge-tree's own base computation picks exactly the base we want and
the merge keeps ort's rename handling. The scaffolding commits are unreachable objects (kept in
the cruft pack like any other) and never reach a ref. Not chosen: a temporary index with
`read-tree -m` + `merge-index git-merge-one-file`, which needs a working tree for file merges
and detects no renames.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from repos.errors import Conflict, Forbidden, InvalidInput
from repos.git import GitError, git_version, run_git
from repos.locking import repository_lock
from repos.pushes import Update, push_record
from repos.selectors import role_for
from repos.visibility import refuse_republishing
from reviews.models import MergeStrategy, Proposal, ProposalState
from workspaces import policy
from workspaces.models import RepositoryBan
from workspaces.selectors import rules_for

_CONTROL = re.compile(r"[\x00-\x1f\x7f<>]")


class MergeConflict(Conflict):
    code = "merge_conflict"

    def __init__(self, message: str, files: list[str]):
        super().__init__(message, fields={"files": files})
        self.files = files


class TargetMoved(Conflict):
    code = "target_moved"


class NotFastForward(Conflict):
    code = "not_fast_forward"


class NothingToMerge(Conflict):
    code = "nothing_to_merge"


@dataclass(frozen=True)
class Identity:
    name: str
    email: str
    date: str = ""  # "@<unix seconds> <+hhmm>"; empty: now


@dataclass(frozen=True)
class MergeResult:
    sha: str
    old: str
    push_id: int | None
    strategy: str


def identity_of(user) -> Identity:
    """The user as a git identity: display name (or username) and email, stripped of what git
    would refuse or misparse in an ident line."""
    name = _CONTROL.sub("", (user.display_name or user.get_full_name() or user.username)).strip()[:100]
    email = _CONTROL.sub("", user.email or "").strip()[:200] or f"{user.username}@users.noreply.hostsite"
    return Identity(name or user.username, email)


def _ident_env(author: Identity, committer: Identity) -> dict[str, str]:
    env = {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_COMMITTER_NAME": committer.name,
        "GIT_COMMITTER_EMAIL": committer.email,
    }
    if author.date:
        env["GIT_AUTHOR_DATE"] = author.date
    return env


# --- git plumbing ------------------------------------------------------------------------------


def rev_parse(path: Path, spec: str) -> str | None:
    result = run_git(["rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"], repo=path, check=False)
    return result.text.strip() or None


def is_ancestor(path: Path, a: str, b: str) -> bool:
    return run_git(["merge-base", "--is-ancestor", a, b], repo=path, check=False).returncode == 0


def tree_of(path: Path, commit: str) -> str:
    return run_git(["rev-parse", f"{commit}^{{tree}}"], repo=path).text.strip()


def merge_base(path: Path, a: str, b: str) -> str | None:
    return run_git(["merge-base", a, b], repo=path, check=False).text.strip() or None


def commit_tree(
    path: Path, tree: str, parents: list[str], message: bytes, *, author: Identity, committer: Identity
) -> str:
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return run_git(args, repo=path, input=message, env=_ident_env(author, committer)).text.strip()


def _merge_tree(path: Path, args: list[str], what: str) -> str:
    """`git merge-tree --write-tree`: the merged tree, or MergeConflict naming the files."""
    result = run_git(
        ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", *args], repo=path, check=False
    )
    if result.returncode not in (0, 1):
        if b"unrelated histories" in result.stderr:
            raise Conflict(f"{what}: the histories have nothing in common.", code="unrelated_histories")
        raise GitError(["merge-tree", *args], result.returncode, result.stderr)
    fields = result.stdout.decode("utf-8", "replace").split("\0")
    tree = fields[0].strip()
    if result.returncode == 0:
        return tree
    files: list[str] = []
    for name in fields[1:]:
        if not name:
            break
        if name not in files:
            files.append(name)
    raise MergeConflict(f"{what} conflicts in {len(files)} file(s): {', '.join(files[:20])}", files)


def merge_trees(path: Path, ours: str, theirs: str, what: str) -> str:
    """Merge two commits, merge-tree finding their merge base(s) itself (git 2.38 form)."""
    return _merge_tree(path, [ours, theirs], what)


def three_way(path: Path, base: str, ours: str, theirs: str, what: str) -> str:
    """The tree of merging `theirs` into `ours` with `base` as the merge base (a cherry-pick
    when base is theirs' parent). See the module docstring for git < 2.40."""
    if base == ours:
        return tree_of(path, theirs)
    if git_version() >= (2, 40, 0):
        return _merge_tree(path, [f"--merge-base={base}", ours, theirs], what)
    scaffold = Identity("hostsite", "hostsite@localhost", "@0 +0000")
    message = b"hostsite merge scaffolding\n"
    side_a = commit_tree(path, tree_of(path, ours), [base], message, author=scaffold, committer=scaffold)
    side_b = commit_tree(path, tree_of(path, theirs), [base], message, author=scaffold, committer=scaffold)
    return _merge_tree(path, [side_a, side_b], what)


def _subject(path: Path, commit: str) -> str:
    return run_git(["log", "-1", "--format=%s", commit, "--"], repo=path).text.strip()


def _replay(path: Path, commit: str, tree: str, parent: str, committer: Identity) -> str:
    """`commit` again, as `tree` on `parent`: its author line, encoding and message byte for
    byte, the merging user as committer. Copied, not re-parsed: histories from old tools carry
    author lines git accepts but will not write again (a bad time zone, no email: docs/object-checks.md),
    and commit-tree would refuse them. Written with --literally because git 2.42+ hash-object
    holds new objects to strict checks; nothing here is new but the committer line, which
    git formats itself (`git var`)."""
    raw = run_git(["cat-file", "commit", commit], repo=path).stdout
    headers, _, message = raw.partition(b"\n\n")
    lines = headers.split(b"\n")
    author = next((line for line in lines if line.startswith(b"author ")), None)
    if author is None:
        raise Conflict(f"commit {commit[:12]} has no author", code="bad_commit")
    encoding = b"".join(line + b"\n" for line in lines if line.startswith(b"encoding "))
    ident = run_git(
        ["var", "GIT_COMMITTER_IDENT"], repo=path, env=_ident_env(committer, committer)
    ).stdout.strip()
    body = (
        f"tree {tree}\nparent {parent}\n".encode()
        + author
        + b"\ncommitter "
        + ident
        + b"\n"
        + encoding
        + b"\n"
        + message
    )
    return run_git(
        ["hash-object", "--literally", "-t", "commit", "-w", "--stdin"], repo=path, input=body
    ).text.strip()


# --- strategies --------------------------------------------------------------------------------


def _merge_commit(path: Path, proposal: Proposal, target: str, head: str, merger: Identity) -> str:
    tree = merge_trees(path, target, head, "Merging")
    message = f"Merge proposal #{proposal.number}: {proposal.title}\n\n"
    if proposal.description.strip():
        message += proposal.description.strip() + "\n\n"
    message += f"From {proposal.source_ref} at {head}.\n"
    return commit_tree(path, tree, [target, head], message.encode(), author=merger, committer=merger)


def _fast_forward(path: Path, target: str, head: str) -> str:
    if not is_ancestor(path, target, head):
        raise NotFastForward(
            "The target branch has commits the proposal does not: it cannot be fast-forwarded. "
            "Rebase the proposal, or merge with another strategy."
        )
    return head


def _squash(path: Path, proposal: Proposal, target: str, head: str, merger: Identity) -> str:
    tree = merge_trees(path, target, head, "Squashing")
    if tree == tree_of(path, target):
        raise NothingToMerge("The proposal's changes are already in the target branch.")
    subjects = run_git(
        ["log", "--reverse", "--format=%s", f"{target}..{head}", "--"], repo=path
    ).text.splitlines()
    message = proposal.title.strip() + "\n\n"
    if proposal.description.strip():
        message += proposal.description.strip() + "\n\n"
    message += f"Squashed commits (proposal #{proposal.number}):\n" + "".join(f"* {s}\n" for s in subjects)
    author = identity_of(proposal.author)
    return commit_tree(path, tree, [target], message.encode(), author=author, committer=merger)


def _rebase(path: Path, target: str, head: str, merger: Identity) -> str:
    """Replay each commit of target..head onto the target, oldest first: authors, dates and
    messages kept, committer the merging user. A commit whose change is already there is
    dropped, as git rebase does; merge commits cannot be replayed."""
    rows = run_git(
        ["rev-list", "--reverse", "--topo-order", "--parents", f"{target}..{head}"], repo=path
    ).text
    tip = target
    for row in rows.splitlines():
        commit, *parents = row.split()
        if len(parents) != 1:
            raise Conflict(
                f"Commit {commit[:12]} is a merge commit, which a rebase cannot replay; "
                "use the merge or squash strategy.",
                code="rebase_merge_commit",
            )
        tree = three_way(
            path, parents[0], tip, commit, f"Rebasing {commit[:12]} ({_subject(path, commit)[:80]})"
        )
        if tree == tree_of(path, tip):
            continue
        tip = _replay(path, commit, tree, tip, merger)
    return tip


def compute(path: Path, proposal: Proposal, strategy: str, target: str, head: str, merger: Identity) -> str:
    """The commit the target branch would point at after merging `head` with `strategy`."""
    if is_ancestor(path, head, target):
        raise NothingToMerge("The proposal's commits are already in the target branch.")
    if strategy == MergeStrategy.FAST_FORWARD:
        return _fast_forward(path, target, head)
    if strategy == MergeStrategy.MERGE:
        return _merge_commit(path, proposal, target, head, merger)
    if strategy == MergeStrategy.SQUASH:
        return _squash(path, proposal, target, head, merger)
    if strategy == MergeStrategy.REBASE:
        new = _rebase(path, target, head, merger)
        if new == target:
            raise NothingToMerge("Every commit of the proposal is already in the target branch.")
        return new
    raise InvalidInput(
        f"Unknown merge strategy {strategy[:20]!r}; use merge, ff, rebase or squash.",
        fields={"strategy": ["invalid"]},
    )


# --- the service -------------------------------------------------------------------------------


def _before_swap(repo, ref: str, old: str, new: str) -> None:
    """A seam between computing a merge and swapping the branch (tests move the branch here)."""


before_swap: Callable[..., None] = _before_swap


def may_merge(user, repo) -> bool:
    """Maintainers and admins, unless a moderator banned them from the repository (a merge is a
    push: the ban refuses both)."""
    role = role_for(user, repo)
    if role is None or role.label not in policy.WRITE_ROLES:
        return False
    return not RepositoryBan.objects.filter(repository=repo, user=user).exists()


def _check_policy(repo, user, ref: str, old: str, new: str) -> None:
    """update-ref bypasses the hooks, so apply the rule a push to this ref would meet."""
    role = role_for(user, repo)
    reason = policy.decide(
        role=role.label if role else "",
        pusher=user.username,
        update=policy.Update(old, new, ref),
        rules=rules_for(repo),
        is_ancestor=lambda a, b: is_ancestor(repo.disk_path, a, b),
        workspace_ref_count=lambda _user: 0,
    )
    if reason:
        raise Forbidden(reason, code="refused_by_policy")
    if not is_ancestor(repo.disk_path, old, new):  # the platform never force-moves a branch
        raise Conflict("The merge would not be a fast-forward of the target branch.", code="not_fast_forward")


def proposal_merge(
    *, proposal: Proposal, user, strategy: str, expected_head: str | None = None
) -> MergeResult:
    """Merge the proposal's latest revision into its target branch and record it as a push."""
    from reviews.selectors import latest_revision

    repo = proposal.repository
    if not may_merge(user, repo):
        raise Forbidden("Only the repository's maintainers and admins may merge.")
    if strategy not in MergeStrategy.values:
        raise InvalidInput(
            f"Unknown merge strategy {str(strategy)[:20]!r}; use merge, ff, rebase or squash.",
            fields={"strategy": ["invalid"]},
        )
    path = repo.disk_path
    ref = f"refs/heads/{proposal.target_branch}"
    merger = identity_of(user)
    with repository_lock(repo.pk, purpose=f"merge of proposal #{proposal.number}", timeout=30):
        proposal.refresh_from_db()
        if proposal.state != ProposalState.OPEN:
            raise Conflict(f"Proposal #{proposal.number} is {proposal.state}.", code="not_open")
        revision = latest_revision(proposal)
        if revision is None:
            raise Conflict("The proposal has no revision to merge.", code="no_revision")
        head = revision.head_sha
        if expected_head and expected_head != head:
            raise Conflict(
                f"The proposal's head is {head[:12]}, not {expected_head[:12]}: reload and review "
                "the new revision.",
                code="head_moved",
            )
        # A merge would publish on the target branch whatever the head reaches: never work a
        # moderator took down or hid from this user (staff's view hides nothing). 403.
        refuse_republishing(repo, user, [head])
        for attempt in (1, 2):
            old = rev_parse(path, ref)
            if old is None:
                raise Conflict(
                    f"The target branch {proposal.target_branch} no longer exists.", code="no_target"
                )
            new = compute(path, proposal, strategy, old, head, merger)
            _check_policy(repo, user, ref, old, new)
            before_swap(repo, ref, old, new)
            swapped = run_git(
                [
                    "update-ref",
                    "-m",
                    f"hostsite: merge of proposal #{proposal.number} by {user.username}",
                    ref,
                    new,
                    old,
                ],
                repo=path,
                check=False,
            )
            if swapped.returncode == 0:
                break
            if rev_parse(path, ref) == old:  # not a lost race: a real failure
                raise GitError(["update-ref", ref], swapped.returncode, swapped.stderr)
            if attempt == 2:
                raise TargetMoved(f"{proposal.target_branch} moved while merging (a push landed); try again.")
        with transaction.atomic():
            push = push_record(repo=repo, pusher=user, updates=[Update(old, new, ref)], protocol="web")
            Proposal.objects.filter(pk=proposal.pk).update(
                state=ProposalState.MERGED,
                merged_by=user,
                merged_at=timezone.now(),
                merge_push=push,
                merge_strategy=strategy,
                merged_sha=new,
                updated_at=timezone.now(),
            )
    proposal.refresh_from_db()
    return MergeResult(new, old, push.pk if push else None, strategy)
