"""Merged work leaves the workspaces by itself, and nothing is lost.

After every push (or merge, which is recorded as one) that moves a canonical branch, a Celery
task finds the workspace refs whose work has just landed on that branch:

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

Deletion is compare-and-delete in one git transaction per ref: the ref is deleted only if it
still points where it was checked, and the commit moves to a hidden `refs/archive/<user>/<id>`
(never advertised) in the same transaction. ArchivedRef records who, when and why; the owner
can restore it until the retention period ends, after which a periodic task drops the archive
ref. All of it runs under the repository's lock (repos.locking), as merges and maintenance do.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from repos.errors import Conflict, Forbidden, InvalidInput
from repos.git import GitError, is_valid_refname, run_git
from repos.locking import repository_lock
from repos.models import Push, Repository, Role
from repos.selectors import role_for
from workspaces import patchids
from workspaces.models import ArchivedRef, PatchId
from workspaces.selectors import workspace_settings
from workspaces.signals import workspace_ref_archived

log = logging.getLogger(__name__)

# A ref with more unmerged commits than this is not checked for a rebase (a rebased ref's
# commits are the ones a push brought: a push of more than this is not a rebase of it).
MAX_REF_COMMITS = 500
# Commits of one branch update whose patch-ids are compared; beyond, only reachability counts.
MAX_LANDED_COMMITS = 5000


def _is_zero(oid: str) -> bool:
    return set(oid) == {"0"}


@dataclass(frozen=True)
class Landed:
    ref: str
    sha: str
    how: str  # merged, rebased, squashed

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
        if not update.ref.startswith("refs/users/") or _is_zero(update.new):
            continue
        base = patchids.merge_base(path, update.new, default)
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


def _index_recent(repo: Repository) -> None:
    """Index workspace pushes the indexing task has not reached yet (it may run behind)."""
    since = timezone.now() - timedelta(days=1)
    indexed = PatchId.objects.filter(repository=repo, push__created_at__gte=since).values("push_id")
    pending = (
        Push.objects.filter(repository=repo, touches_workspace=True, created_at__gte=since)
        .exclude(pk__in=indexed)
        .order_by("-pk")[:200]
    )
    for push in pending:
        try:
            index_push(push)
        except GitError:
            log.exception("could not index push #%s", push.pk)


# --- finding what landed --------------------------------------------------------------------------


def _listed(path, args: list[str]) -> dict[str, str]:
    out = run_git(["for-each-ref", "--format=%(objectname) %(refname)", *args], repo=path).text
    return {ref: oid for oid, _, ref in (line.partition(" ") for line in out.splitlines())}


def find_landed(repo: Repository, branch: str, old: str, new: str) -> list[Landed]:
    """Workspace refs whose work the update old -> new of refs/heads/<branch> landed."""
    path = repo.disk_path
    args = [f"--merged={new}"] + ([] if _is_zero(old) else [f"--no-merged={old}"])
    merged = _listed(path, [*args, "refs/users/"])
    landed = [Landed(ref, sha, "merged") for ref, sha in sorted(merged.items())]

    brought = run_git(
        [
            "rev-list",
            "--no-merges",
            f"--max-count={MAX_LANDED_COMMITS}",
            new,
            *([] if _is_zero(old) else ["--not", old]),
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
        if u and u.startswith("refs/users/")
    }
    if not owners:
        return landed
    candidates = {
        ref: sha
        for ref, sha in _listed(path, [f"refs/users/{name}/" for name in sorted(owners)]).items()
        if ref not in merged
    }
    found = _landed_by_patch(path, candidates, new, landed_ids)
    landed += [Landed(ref, candidates[ref], how) for ref, how in sorted(found.items())]
    return landed


def _landed_by_patch(path, candidates: dict[str, str], new: str, landed_ids: set[str]) -> dict[str, str]:
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
        base = next(iter(boundary)) if len(boundary) == 1 else patchids.merge_base(path, tip, new)
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


# --- deleting and restoring -----------------------------------------------------------------------


def _archive_ref(username: str) -> str:
    return f"refs/archive/{username}/{timezone.now():%Y%m%d%H%M%S}-{uuid.uuid4().hex[:12]}"


def _transaction(path, lines: list[str]) -> bool:
    """One atomic `update-ref --stdin` transaction; False if a ref was not where expected."""
    result = run_git(
        ["update-ref", "--stdin"],
        repo=path,
        input="".join(f"{line}\n" for line in lines).encode(),
        check=False,
    )
    if result.returncode != 0:
        log.info("ref transaction refused: %s", result.stderr.decode("utf-8", "replace").strip()[:500])
    return result.returncode == 0


def archive_landed(
    repo: Repository, branch: str, landed: list[Landed], *, push: Push | None
) -> list[ArchivedRef]:
    """Compare-and-delete each ref into refs/archive/, and record it. A ref that moved since it
    was checked stays (its transaction fails alone)."""
    path = repo.disk_path
    expires = timezone.now() + timedelta(days=settings.WORKSPACE_ARCHIVE_DAYS)
    what = {"merged": "merged into", "rebased": "rebased onto", "squashed": "squashed into"}
    archives = {item.ref: _archive_ref(item.username) for item in landed}

    def steps(item: Landed) -> list[str]:
        return [f"create {archives[item.ref]} {item.sha}", f"delete {item.ref} {item.sha}"]

    # All in one transaction; if any ref moved meanwhile, each on its own, so the others go.
    if landed and _transaction(
        path, ["start", *(s for item in landed for s in steps(item)), "prepare", "commit"]
    ):
        done = landed
    else:
        done = [item for item in landed if _transaction(path, ["start", *steps(item), "prepare", "commit"])]
    where = f" in push #{push.pk}" if push else ""
    rows = [
        ArchivedRef(
            repository=repo,
            username=item.username,
            ref=item.ref,
            sha=item.sha,
            archive_ref=archives[item.ref],
            branch=branch,
            how=item.how,
            reason=f"{what[item.how]} {branch}{where}",
            push=push,
            deleted_by=push.pusher if push else None,
            expires_at=expires,
        )
        for item in done
    ]
    with transaction.atomic():
        created = ArchivedRef.objects.bulk_create(rows)
        for row in created:
            transaction.on_commit(
                lambda row=row: workspace_ref_archived.send(
                    sender=ArchivedRef,
                    repository_id=repo.pk,
                    ref=row.ref,
                    sha=row.sha,
                    push_id=row.push_id,
                    reason=row.reason,
                )
            )
    return created


def cleanup_after_push(push: Push) -> list[ArchivedRef]:
    """Archive the workspace refs each canonical branch update of this push landed."""
    repo = push.repository
    updates = [u for u in push.ref_updates.all() if u.ref.startswith("refs/heads/") and not _is_zero(u.new)]
    if not updates or not workspace_settings(repo).delete_merged_refs:
        return []
    archived = []
    with repository_lock(repo.pk, purpose=f"cleanup after push #{push.pk}", timeout=settings.GIT_TIMEOUT):
        _index_recent(repo)
        for update in updates:
            branch = update.ref.removeprefix("refs/heads/")
            landed = find_landed(repo, branch, update.old, update.new)
            archived += archive_landed(repo, branch, landed, push=push)
    if archived:
        log.info(
            "archived %d merged workspace refs in %s after push #%s", len(archived), repo.full_name, push.pk
        )
    return archived


def restore(archived: ArchivedRef, *, user, name: str | None = None) -> str:
    """Bring an archived ref back (under its old name, or `name` in the same workspace)."""
    repo = archived.repository
    if user is None or not (user.username == archived.username or role_for(user, repo) == Role.ADMIN):
        raise Forbidden("only the workspace's owner or a repository admin can restore its refs")
    if archived.state != ArchivedRef.State.ARCHIVED:
        raise Conflict(f"this ref was already {archived.state}")
    prefix = f"refs/users/{archived.username}/"
    ref = archived.ref if not name else prefix + name.strip().removeprefix(prefix)
    if not ref.startswith(prefix) or not is_valid_refname(ref) or len(ref.encode()) > 255:
        raise InvalidInput(f"{ref!r} is not a valid ref name in {archived.username}'s workspace")
    with repository_lock(repo.pk, purpose=f"restore {ref}", timeout=30):
        # `create` fails if the ref exists: restoring never overwrites newer work.
        ok = _transaction(
            repo.disk_path,
            [
                "start",
                f"create {ref} {archived.sha}",
                f"delete {archived.archive_ref} {archived.sha}",
                "prepare",
                "commit",
            ],
        )
        if not ok:
            raise Conflict(f"{ref} exists (or the archive moved): restore it under another name")
        ArchivedRef.objects.filter(pk=archived.pk).update(
            state=ArchivedRef.State.RESTORED, restored_at=timezone.now(), restored_by=user, ref=ref
        )
    return ref


def expire_due(now=None) -> int:
    """Drop archive refs past their retention period (the periodic task)."""
    now = now or timezone.now()
    expired = 0
    due = ArchivedRef.objects.filter(state=ArchivedRef.State.ARCHIVED, expires_at__lte=now).select_related(
        "repository"
    )[:1000]
    for row in due:
        with repository_lock(row.repository_id, purpose="expire archived refs", timeout=settings.GIT_TIMEOUT):
            gone = _transaction(
                row.repository.disk_path,
                ["start", f"delete {row.archive_ref} {row.sha}", "prepare", "commit"],
            )
            if gone or not _ref_exists(row.repository.disk_path, row.archive_ref):
                ArchivedRef.objects.filter(pk=row.pk).update(state=ArchivedRef.State.EXPIRED)
                expired += 1
    return expired


def _ref_exists(path, ref: str) -> bool:
    return run_git(["show-ref", "--verify", "--quiet", ref], repo=path, check=False).returncode == 0
