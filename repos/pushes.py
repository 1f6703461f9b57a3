"""Recording accepted pushes: the database side of git receive-pack."""

from __future__ import annotations

import logging
import re
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from gitcore.git import GitError, run_git
from gitcore.gittools import is_ancestor, text_refname
from repos import changelog, enqueue, signals
from repos.hooks import refspace
from repos.hooks.updates import Update, is_zero
from repos.models import ChangeKind, Push, PushCommit, RefUpdate, Repository, Webhook

log = logging.getLogger(__name__)
# A ref name as git allows it: no control characters (NUL, which no database stores, included).
_LINE = re.compile(
    r"^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{40}|[0-9a-f]{64}) ([^\x00-\x20\x7f][^\x00-\x1f\x7f]{0,254})$"
)


def parse_updates(text: str) -> list[Update]:
    """The lines post-receive wrote (`<old> <new> <ref>` each, git's own format). A lone
    surrogate (a byte that is not UTF-8, as a spool file's `\\udcff` escape reads back) becomes
    U+FFFD, as the push log records such names: no database stores a surrogate, nor the push
    with it."""
    updates = []
    for line in text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").splitlines():
        match = _LINE.match(line)
        if match:
            updates.append(Update(match[1], match[2], match[3]))
        elif line.startswith(_OPTION):
            continue  # see parse_push_options
        elif line.strip():
            log.warning("ignoring malformed ref update line %r", line[:300])
    return updates


_OPTION = "option "
MAX_PUSH_OPTIONS = 64
MAX_PUSH_OPTION_CHARS = 8192


def parse_push_options(text: str) -> list[str]:
    """The `option <key=value>` lines of the updates file: the client's push options (bounded
    by post-receive) and the server's own `hostsite.*` ones (proc-receive's)."""
    options = [
        line[len(_OPTION) :].replace("\0", "")[:MAX_PUSH_OPTION_CHARS]
        for line in text.split("\n")
        if line.startswith(_OPTION)
    ]
    return options[:MAX_PUSH_OPTIONS]


def introduced_commits(repo: Repository, updates: list[Update], pusher_name: str = "") -> list[str]:
    """Commits the push made reachable, oldest first.

    Run after git updated the refs: reachable from the new tips, but not from the old tips,
    the canonical refs, or the pusher's other workspace refs. Other users' workspaces are not
    walked: a commit that was already in someone else's workspace is listed here too, and the
    unique (repository, sha) constraint keeps it with the push that brought it first.

    The tips are listed with for-each-ref, which seeks to each prefix, and handed to rev-list
    on stdin: rev-list's own `--glob` matches its pattern against every ref of the repository,
    which with 100k workspace refs cost ~40 ms a push (bench/workspaces.py).
    """
    news = [u.new for u in updates if not is_zero(u.new)]
    if not news:
        return []
    prefixes = ["refs/heads/", "refs/tags/"] + (
        [refspace.workspace_prefix(pusher_name)] if pusher_name else []
    )
    listed = run_git(
        ["for-each-ref", "--format=%(objectname) %(refname)", *prefixes], repo=repo.disk_path
    ).text
    updated = {u.ref for u in updates}
    # The refs this push moved point at the new commits now: they are not tips to stop at.
    tips = {
        oid for oid, _, ref in (line.partition(" ") for line in listed.splitlines()) if ref not in updated
    }
    tips.update(u.old for u in updates if not is_zero(u.old))
    revs = "".join(f"{oid}\n" for oid in news) + "".join(f"^{oid}\n" for oid in sorted(tips))
    return run_git(
        ["rev-list", "--topo-order", "--reverse", "--stdin"], repo=repo.disk_path, input=revs.encode()
    ).text.split()


def is_forced(path, old: str, new: str) -> bool:
    """Whether moving a ref from `old` to `new` dropped commits (not a fast-forward): what a
    pushlog reader must not miss, e.g. a mirrored upstream that rewrote a branch. Creations and
    deletions are not forced. One `merge-base --is-ancestor` (the commit-graph makes it cheap);
    objects it cannot compare as commits (a tag moved to a tree) count as forced."""
    if is_zero(old) or is_zero(new) or old == new:
        return False
    try:
        return not is_ancestor(path, old, new)
    except GitError:  # a timeout: when in doubt, say forced rather than hide a rewrite
        log.exception("could not compare %s and %s in %s", old, new, path)
        return True


# The replication log's kind of a push, by the protocol it came in by.
KIND_OF_PROTOCOL = {
    "http": ChangeKind.PUSH,
    "ssh": ChangeKind.PUSH,
    "web": ChangeKind.WEB,
    "api": ChangeKind.WEB,
    "mirror": ChangeKind.MIRROR,
    "import": ChangeKind.IMPORT,
}


def push_record(
    *,
    repo: Repository,
    pusher,
    updates: list[Update],
    protocol: str = "http",
    push_options: list[str] | None = None,
    pusher_name: str | None = None,
    list_commits: bool = True,
    spool_id: str | None = None,
    created_at: datetime | None = None,
    kind: ChangeKind | None = None,
) -> Push | None:
    """Record one push, its ref updates and the commits it introduced, in one transaction;
    then enqueue the post-push work. `pusher` may be None with a `pusher_name` for the platform's
    own pushers (a pull mirror's syncs are recorded as pushes by "mirror", a reserved name).
    An import records its refs without listing commits: the history it brings predates the
    pushlog (one row per commit of a 100k-commit history would only say "imported").

    A git push is recorded from its spool file (repos.push_spool), possibly more than once
    (the web process, then the replay task): with its `spool_id`, a second call returns the
    first call's push and does nothing else. `created_at` is when git took the push, which a
    replay may record minutes later.

    The push is also the repository's next change in the replication log (repos.changelog),
    appended in the same transaction; `kind` names it there (default: by the protocol)."""
    if not updates:
        return None
    if spool_id is not None and (done := Push.objects.filter(spool_id=spool_id).first()) is not None:
        return done
    # Rows hold text: a name's bytes that are not UTF-8 (surrogates, as git's listings are read
    # for git) as U+FFFD, as text_refname writes them; no database stores a surrogate.
    updates = [
        u if text_refname(u.ref) == u.ref else Update(u.old, u.new, text_refname(u.ref)) for u in updates
    ]
    try:
        return _record(
            repo=repo,
            pusher=pusher,
            updates=updates,
            protocol=protocol,
            push_options=push_options,
            pusher_name=pusher_name,
            list_commits=list_commits,
            spool_id=spool_id,
            created_at=created_at,
            kind=kind or KIND_OF_PROTOCOL.get(protocol, ChangeKind.PUSH),
        )
    except IntegrityError:
        # Another process recorded the same spool file between the check above and the insert.
        if spool_id is not None and (done := Push.objects.filter(spool_id=spool_id).first()) is not None:
            return done
        raise


def _summary(updates: list[Update]) -> str:
    shown = ", ".join(u.ref for u in updates[:3])
    return shown + (f" and {len(updates) - 3} more" if len(updates) > 3 else "")


def _record(
    *, repo, pusher, updates, protocol, push_options, pusher_name, list_commits, spool_id, created_at, kind
) -> Push:
    username = getattr(pusher, "username", "") or ""
    try:
        commits = introduced_commits(repo, updates, username) if list_commits else []
    except GitError:
        # The refs moved: record that much, even if the commit list cannot be had.
        log.exception("could not list the commits of a push to %s", repo.full_name)
        commits = []
    forced = [is_forced(repo.disk_path, u.old, u.new) for u in updates]
    with transaction.atomic():
        push = Push.objects.create(
            repository=repo,
            pusher=pusher,
            pusher_name=username or pusher_name or "",
            protocol=protocol,
            touches_workspace=any(u.ref.startswith(refspace.WORKSPACES) for u in updates),
            push_options=list(push_options or []),
            spool_id=spool_id,
        )
        if created_at is not None:
            # auto_now_add ignores a value given to create().
            Push.objects.filter(pk=push.pk).update(created_at=created_at)
            push.created_at = created_at
        RefUpdate.objects.bulk_create(
            [
                RefUpdate(push=push, ref=u.ref, old=u.old, new=u.new, forced=flag)
                for u, flag in zip(updates, forced, strict=True)
            ]
        )
        # Unique per repository: a commit a concurrent push already claimed stays with it.
        PushCommit.objects.bulk_create(
            [PushCommit(repository=repo, push=push, sha=sha, position=i) for i, sha in enumerate(commits)],
            ignore_conflicts=True,
        )
        changelog.record(
            repo.pk,
            kind,
            push=push,
            actor=pusher,
            summary=_summary(updates),
            also={"pushes_since_maintenance": F("pushes_since_maintenance") + 1},
        )
        due = (repo.pushes_since_maintenance + 1) >= settings.MAINTENANCE_PUSH_THRESHOLD
        push_id, repo_id = push.pk, repo.pk
        if due:
            enqueue.after_commit("repos.tasks.maintain_repository", repo_id)
        if Webhook.objects.filter(repository=repo, active=True).exists():
            enqueue.after_commit("repos.tasks.fan_out_webhooks", push_id)
        # The other apps' receivers only enqueue their tasks (bundles, proposals, workspaces).
        transaction.on_commit(
            lambda: signals.push_recorded.send_robust(sender=Push, push_id=push_id, repository_id=repo_id)
        )
    return push
