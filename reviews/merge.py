"""Merging a proposal into its target branch, without a working tree (reviews.mergetree).

The target branch moves by compare-and-swap, `git update-ref <ref> <new> <expected-old>`,
under the repository's lock, so a push that lands meanwhile is never overwritten: git refuses
the swap, the merge is computed once more on top of the pushed commit, and if the branch moved
again it fails with "target moved" (409) and nothing changes. update-ref bypasses the hooks, so
the new tip is first judged by the very policy the pre-receive hook runs (repos.gitaccess). A
merge is recorded as a push (protocol "web"), so the pushlog, webhooks and post-push work see
it as they see any push.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from gitcore.git import GitError, run_git
from gitcore.gittools import is_ancestor, rev_parse
from repos import gitaccess
from repos.errors import Conflict, Forbidden, InvalidInput
from repos.gitaccess import GitRequest
from repos.hooks.pushpolicy import WRITE_ROLES
from repos.hooks.updates import Update
from repos.locking import repository_lock
from repos.pushes import push_record
from repos.selectors import role_for
from repos.visibility import refuse_republishing
from reviews import events, rules
from reviews.authorship import squash_authors, trailers
from reviews.mergetree import (
    Identity,
    commit_tree,
    identity_of,
    merge_trees,
    replay,
    subject,
    three_way,
    tree_of,
)
from reviews.mergetree import MergeConflict as MergeConflict  # raised by the strategies
from reviews.models import MergeStrategy, Proposal, ProposalState
from reviews.selectors import latest_revision
from workspaces.models import RepositoryBan


class TargetMoved(Conflict):
    code = "target_moved"


class NotFastForward(Conflict):
    code = "not_fast_forward"


class NothingToMerge(Conflict):
    code = "nothing_to_merge"


class RulesNotMet(Conflict):
    """The target branch's merge rules (reviews.rules) are not met; `fields` lists what is
    missing by kind (approvals, code_owners, checks_failing, checks_pending)."""

    code = "rules_not_met"

    def __init__(self, verdict: rules.Verdict):
        super().__init__(
            "The branch's merge rules are not met: " + " ".join(m.message for m in verdict.missing[:10]),
            fields=verdict.as_fields(),
        )
        self.verdict = verdict


@dataclass(frozen=True)
class MergeResult:
    sha: str
    old: str
    push_id: int | None
    strategy: str


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
    author, co_authors = squash_authors(path, target, head, proposal.author)
    if co_authors:
        message += "\n" + trailers(co_authors)
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
            path, parents[0], tip, commit, f"Rebasing {commit[:12]} ({subject(path, commit)[:80]})"
        )
        if tree == tree_of(path, tip):
            continue
        tip = replay(path, commit, tree, tip, merger)
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
    if role is None or role.label not in WRITE_ROLES:
        return False
    return not RepositoryBan.objects.filter(repository=repo, user=user).exists()


def _check_policy(repo, user, ref: str, old: str, new: str) -> None:
    """update-ref bypasses the hooks, so ask the policy the hooks run, as a push would."""
    role = role_for(user, repo)
    req = GitRequest(
        repository=repo,
        user=user,
        role=role.label if role else "",
        service="receive-pack",
        commands=((old, new, ref),),
    )
    reasons = gitaccess.check_updates(req, [Update(old, new, ref)])
    if reasons:
        raise Forbidden(reasons[0], code="refused_by_policy")
    if not is_ancestor(repo.disk_path, old, new):  # the platform never force-moves a branch
        raise Conflict("The merge would not be a fast-forward of the target branch.", code="not_fast_forward")


def proposal_merge(
    *, proposal: Proposal, user, strategy: str, expected_head: str | None = None
) -> MergeResult:
    """Merge the proposal's latest revision into its target branch and record it as a push."""
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
        verdict = rules.evaluate(proposal, revision)
        if not verdict.ok:
            raise RulesNotMet(verdict)
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
        assert old is not None  # the loop leaves only after a swap from an existing tip
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
    events.merged(proposal, actor=user)
    return MergeResult(new, old, push.pk if push else None, strategy)
