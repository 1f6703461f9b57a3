"""Moving a repository's nameless heads to the one-component layout (repos.hooks.refspace):
refs/users/<u>/<branch>/<12 hex> becomes refs/users/<u>/<branch with '-'>-<12 hex>[-<n>], so a
branch push of <branch> by their owner no longer fails to lock.

Only refs that nameless pushes wrote are renamed (the `hostsite.for=` push options say which): a
ref of that shape the owner pushed by name is theirs, and keeps its name. Each rename is recorded
(RefRename) before git moves anything, so a task redelivered after its worker died finds the
names it chose; git moves every ref of the repository in one `update-ref --stdin` transaction
with compare-and-swap on each old value; then the rows that name the refs follow (archived refs,
the push options nameless advancement reads, and, through `workspace_refs_renamed`, proposals).
Every step is safe to run again."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from gitcore.gittools import RefTransaction, text_ref_map, zero_like
from repos.hooks import refspace
from repos.hooks.updates import Update
from repos.locking import repository_lock
from repos.models import ChangeKind, Push, Repository
from repos.pushes import push_record
from workspaces.models import ArchivedRef, RefRename
from workspaces.signals import workspace_refs_renamed

log = logging.getLogger(__name__)

_FOR = "hostsite.for="
MAX_SAME_NAME = 100


def nameless_written(repo: Repository) -> dict[str, str]:
    """ref -> branch for every ref a nameless push wrote (its latest such push says the branch)."""
    written: dict[str, str] = {}
    rows = (
        Push.objects.filter(repository=repo, touches_workspace=True)
        .order_by("pk")
        .values_list("push_options")
    )
    for (options,) in rows.iterator():
        for option in options or []:
            if isinstance(option, str) and option.startswith(_FOR):
                ref, _, branch = option[len(_FOR) :].partition(" ")
                if ref and branch:
                    written[ref] = branch
    return written


def repository_migrate_nameless(*, repo: Repository) -> int:
    """Rename this repository's legacy nameless heads; returns how many moved in git now."""
    with repository_lock(repo.pk, purpose="rename nameless heads", timeout=60):
        live = text_ref_map(repo.disk_path, refspace.WORKSPACES)
        _plan(repo, live)
        moved = _apply(repo, live)
        _follow(repo)
    return moved


def _plan(repo: Repository, live: dict[str, str]) -> None:
    written = nameless_written(repo)
    known = dict(RefRename.objects.filter(repository=repo).values_list("old_ref", "new_ref"))
    archived = ArchivedRef.objects.filter(repository=repo).values_list("ref", "sha")
    candidates = dict(archived) | live  # a live ref's tip wins over an archived row's
    taken = set(live) | set(known.values())
    new_rows = []
    for old, sha in sorted(candidates.items()):
        legacy = refspace.legacy_nameless(old)
        if legacy is None or old not in written or old in known:
            continue
        owner, _path_branch, short = legacy
        new = _free_name(owner, written[old], short, taken)
        if new is None:
            log.warning("no free name for %s in repository %s", old, repo.pk)
            continue
        taken.add(new)
        new_rows.append(RefRename(repository=repo, old_ref=old, new_ref=new, sha=sha))
    RefRename.objects.bulk_create(new_rows, ignore_conflicts=True)


def _free_name(owner: str, branch: str, short: str, taken: set[str]) -> str | None:
    for n in range(1, MAX_SAME_NAME + 1):
        name = refspace.nameless_ref(owner, branch, short, n)
        if not refspace.name_conflicts(name, taken):
            return name
    return None


def _apply(repo: Repository, live: dict[str, str]) -> int:
    """One transaction for every rename git has not seen yet. A ref moved by a push meanwhile
    fails the compare-and-swap: nothing moves, and the task runs again (RefTransactionFailed)."""
    pending = list(RefRename.objects.filter(repository=repo, applied_at__isnull=True))
    tx = RefTransaction(repo.disk_path)
    done, moving, updates = [], 0, []
    for row in pending:
        tip = live.get(row.old_ref)
        if tip is None:
            done.append(row.pk)  # archived, deleted, or renamed by a run that died before it said so
        elif row.new_ref in live:
            # Pushed to since the name was chosen: left as it is (the page still redirects nothing).
            log.warning("%s exists; %s keeps its name in repository %s", row.new_ref, row.old_ref, repo.pk)
        else:
            tx.create(row.new_ref, tip).delete(row.old_ref, old=tip)
            updates += [Update(tip, zero_like(tip), row.old_ref), Update(zero_like(tip), tip, row.new_ref)]
            done.append(row.pk)
            moving += 1
    tx.commit()
    with transaction.atomic():
        if updates:
            # Every ref change is in the pushlog: a rename is a deletion and a creation by the
            # platform, so reconciliation finds nothing unrecorded and feeds see the new names.
            push_record(
                repo=repo,
                pusher=None,
                pusher_name="system",
                protocol="maintenance",
                updates=updates,
                list_commits=False,
                kind=ChangeKind.MAINTENANCE,
            )
        RefRename.objects.filter(pk__in=done).update(applied_at=timezone.now())
    return moving


@transaction.atomic
def _follow(repo: Repository) -> None:
    """The rows that name a renamed ref name the new one (each update a no-op the second time)."""
    renames = dict(
        RefRename.objects.filter(repository=repo, applied_at__isnull=False).values_list("old_ref", "new_ref")
    )
    if not renames:
        return
    for old, new in renames.items():
        ArchivedRef.objects.filter(repository=repo, ref=old).update(ref=new)
    # Nameless advancement reads which refs nameless pushes wrote from these options.
    for push in Push.objects.filter(repository=repo, touches_workspace=True).only("push_options"):
        options = [_renamed_option(o, renames) for o in push.push_options or []]
        if options != push.push_options:
            Push.objects.filter(pk=push.pk).update(push_options=options)
    workspace_refs_renamed.send(sender=RefRename, repository_id=repo.pk, renames=renames)


def _renamed_option(option, renames: dict[str, str]):
    if not isinstance(option, str) or not option.startswith(_FOR):
        return option
    ref, sep, branch = option[len(_FOR) :].partition(" ")
    return f"{_FOR}{renames.get(ref, ref)}{sep}{branch}"


def renamed_to(repo: Repository, ref: str) -> str | None:
    """The name a renamed workspace ref has now (for pages that still link the old one)."""
    return (
        RefRename.objects.filter(repository=repo, old_ref=ref, applied_at__isnull=False)
        .values_list("new_ref", flat=True)
        .first()
    )
