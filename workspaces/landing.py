"""Finding the workspace refs whose work a canonical branch update landed.

- merged: the ref's tip is reachable from the branch's new tip and was not from its old one
  (`for-each-ref --merged=<new> --no-merged=<old>`, one walk for all refs). A ref that was
  already reachable before the push (a start point pushed at main, say) is left alone.
- rebased: every commit the ref has that the branch lacks has the patch-id of a commit this
  push brought to the branch.
- squashed: the ref's combined diff from its merge base with the branch has the patch-id of a
  commit this push brought.

The last two need candidates, and walking 100k refs per push would not do: each workspace push
is indexed by patch-id (PatchId, a Celery task after the push), and cleanup looks up the
patch-ids of what landed; the workspaces of the users whose pushes carried them are the
candidates, each then checked against git as above.

What cannot be detected (documented in the README): a rebase or squash that needed conflict
resolution or changed the diff (the patch-ids differ); a rebase that dropped or reworded
commits is still found, but one that split or combined some of them is not, unless the whole
ref was squashed; changes landed by several pushes (each push is compared with what it
brought); work pushed to a workspace before indexing existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitcore.git import run_git
from gitcore.gittools import is_zero, merge_base, text_ref_map
from repos.hooks import refspace
from repos.models import Push, Repository
from workspaces import patchids
from workspaces.models import PatchId

# A ref with more unmerged commits than this is not checked for a rebase (a rebased ref's
# commits are the ones a push brought: a push of more than this is not a rebase of it).
MAX_REF_COMMITS = 500
# Commits of one branch update whose patch-ids are compared; beyond, only reachability counts.
MAX_LANDED_COMMITS = 5000


@dataclass(frozen=True)
class Landed:
    ref: str
    sha: str
    how: str  # merged, rebased, squashed (or stale: already on the branch, workspaces.stale)

    @property
    def username(self) -> str:
        return self.ref.split("/", 3)[2]


# --- indexing -----------------------------------------------------------------------------------


def index_push(push: Push) -> int:
    """PatchId rows for a workspace push: its commits', and its updated refs' combined diffs
    against the default branch. Idempotent."""
    repo = push.repository
    path = repo.disk_path
    shas = list(push.commits.values_list("sha", flat=True))
    rows = [
        PatchId(repository=repo, kind=PatchId.Kind.COMMIT, patch_id=pid, sha=sha, push=push)
        for sha, pid in patchids.of_commits(path, shas).items()
    ]
    default = f"refs/heads/{repo.default_branch}"
    for update in push.ref_updates.all():
        if not update.ref.startswith(refspace.WORKSPACES) or is_zero(update.new):
            continue
        base = merge_base(path, update.new, default)
        if base and base != update.new:
            pid = patchids.of_range(path, base, update.new)
            if pid:
                rows.append(
                    PatchId(
                        repository=repo, kind=PatchId.Kind.COMBINED, patch_id=pid, sha=update.new, push=push
                    )
                )
    PatchId.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


# --- finding what landed --------------------------------------------------------------------------


def _listed(path: Path, *args: str) -> dict[str, str]:
    # for-each-ref takes its --merged/--no-merged filters among the patterns.
    return text_ref_map(path, *args)


def find_landed(repo: Repository, branch: str, old: str, new: str) -> list[Landed]:
    """Workspace refs whose work the update old -> new of refs/heads/<branch> landed."""
    path = repo.disk_path
    args = [f"--merged={new}"] + ([] if is_zero(old) else [f"--no-merged={old}"])
    merged = _listed(path, *args, refspace.WORKSPACES)
    landed = [Landed(ref, sha, "merged") for ref, sha in sorted(merged.items())]

    brought = run_git(
        [
            "rev-list",
            "--no-merges",
            f"--max-count={MAX_LANDED_COMMITS}",
            new,
            *([] if is_zero(old) else ["--not", old]),
        ],
        repo=path,
    ).text.split()
    landed_ids = set(patchids.of_commits(path, brought).values())
    if not landed_ids:
        return landed
    push_ids = PatchId.objects.filter(repository=repo, patch_id__in=landed_ids).values_list(
        "push_id", flat=True
    )
    owners = {
        u.split("/", 3)[2]
        for u in Push.objects.filter(pk__in=set(push_ids)).values_list("ref_updates__ref", flat=True)
        if u and u.startswith(refspace.WORKSPACES)
    }
    if not owners:
        return landed
    candidates = {
        ref: sha
        for ref, sha in _listed(path, *(refspace.workspace_prefix(name) for name in sorted(owners))).items()
        if ref not in merged
    }
    found = _landed_by_patch(path, candidates, new, landed_ids)
    landed += [Landed(ref, candidates[ref], how) for ref, how in sorted(found.items())]
    return landed


def _landed_by_patch(
    path: Path, candidates: dict[str, str], new: str, landed_ids: set[str]
) -> dict[str, str]:
    """ref -> "rebased" or "squashed" for the candidates whose work the branch (at `new`) has
    by patch-id. A handful of git processes for all candidates together: one rev-list for
    the commits they have that the branch lacks, one patch-id pipeline for those commits, one
    for the candidates' combined diffs."""
    if not candidates:
        return {}
    out = run_git(["rev-list", "--parents", *sorted(set(candidates.values())), "--not", new], repo=path).text
    parents = {commit: rest for commit, *rest in (line.split() for line in out.splitlines())}
    ids = patchids.of_commits(path, [c for c, ps in parents.items() if len(ps) <= 1])
    found: dict[str, str] = {}
    ranges: dict[str, tuple[str, str]] = {}
    for ref, tip in candidates.items():
        own, boundary = _own_commits(tip, parents)
        if not own or len(own) > MAX_REF_COMMITS:
            continue
        # Rebased: every commit of its own (no merges; an empty commit has no patch-id) landed.
        if all(len(parents[c]) <= 1 and c in ids for c in own) and {ids[c] for c in own} <= landed_ids:
            found[ref] = "rebased"
            continue
        # Squashed: its combined diff from where it left the branch. With one boundary commit
        # that is the merge base; otherwise ask git.
        base = next(iter(boundary)) if len(boundary) == 1 else merge_base(path, tip, new)
        if base:
            ranges[ref] = (tip, base)
    combined = patchids.of_ranges(path, ranges.values())
    found.update({ref: "squashed" for ref, (tip, _base) in ranges.items() if combined.get(tip) in landed_ids})
    return found


def _own_commits(tip: str, parents: dict[str, list[str]]) -> tuple[set[str], set[str]]:
    """The commits reachable from tip within `parents` (those the branch lacks), and the
    commits just outside (where the work left the branch)."""
    own, boundary, stack = set(), set(), [tip]
    while stack:
        commit = stack.pop()
        if commit in own:
            continue
        if commit not in parents:
            boundary.add(commit)
            continue
        own.add(commit)
        stack.extend(parents[commit])
        if len(own) > MAX_REF_COMMITS:
            break
    return own, boundary
