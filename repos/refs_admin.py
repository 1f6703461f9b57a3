"""Admins remove refs: a pull request head an import kept, a stale remote-tracking ref, a whole
`refs/imported/pull/` namespace, a branch or a tag.

What can never be removed here, and why:
- workspace refs (`refs/users/...`) follow the workspace rules and have their own pages;
- the platform's internal refs: `refs/archive/` keeps deleted workspace refs restorable,
  `refs/takedown/` holds content under a moderator's take-down;
- the default branch and protected branches, and a mirror's branches and tags (they change only
  through the mirror's syncs and would come back at the next one). The rules a push meets
  decide these: the push policy is asked exactly as the pre-receive hook asks it,
  so a removal here and `git push origin :<ref>` never disagree. (`refs/imported/` is allowed
  by both, but receive-pack refuses it as a hidden ref: it is removed here only.)

A removal is compare-and-delete: the refs' values are read under the repository's lock and
deleted in one `update-ref --stdin` transaction that checks each is still there. A ref a push
moved meanwhile fails the whole transaction and nothing is removed. Each removal is recorded
as a push (protocol "web" or "api", one RefUpdate per ref to the zero id), so the pushlog,
webhooks and bundle builds see it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction

from gitcore.git import is_valid_refname
from gitcore.gittools import RefTransaction, RefTransactionFailed, text_refname, zero_like
from repos import gitaccess, selectors
from repos.audit import Action, record_audit
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.gitaccess import GitRequest
from repos.hooks.updates import Update
from repos.locking import repository_lock
from repos.models import Mirror, Push, Repository
from repos.pushes import push_record
from repos.refs_listing import (
    RefEntry,
    namespace_of,
    not_removable,
    parse_prefix,
    plausible,
    read_refs,
    under,
)

# An explicit list larger than this is refused; a namespace has no such cap (it is one
# transaction whatever its size: 5,000 refs take well under a second, tests/repos/test_refs_admin.py).
MAX_REFS = 10_000
VIA = ("web", "api")


@dataclass(frozen=True)
class Removal:
    removed: list[RefEntry]
    push: Push | None


def _names(refs) -> list[str]:
    if isinstance(refs, str | bytes) or not isinstance(refs, Sequence) or not refs:
        raise InvalidInput(
            'Give a list of full ref names, such as ["refs/pull/1/head"].', fields={"refs": ["invalid"]}
        )
    if len(refs) > MAX_REFS:
        raise InvalidInput(
            f"At most {MAX_REFS} refs at once; remove a whole namespace with its prefix instead.",
            fields={"refs": ["too_many"]},
        )
    for ref in refs:
        if not isinstance(ref, str) or not plausible(ref):
            shown = ref[:80] if isinstance(ref, str) else type(ref).__name__
            raise InvalidInput(
                f"{shown!r} is not a ref name: give full names such as refs/pull/1/head.",
                fields={"refs": ["invalid"]},
            )
    names = list(dict.fromkeys(refs))  # dedupe, keep the order
    for ref in names:
        why = not_removable(ref)
        if why:
            raise InvalidInput(why, fields={"refs": ["not_removable"]})
    return names


# --- the rules a push meets ------------------------------------------------------------------------


def _refusals(repo: Repository, actor, entries: list[RefEntry]) -> list[str]:
    if Mirror.objects.filter(repository=repo, enabled=True).exists():
        mirrored = [e.ref for e in entries if e.ref.startswith(("refs/heads/", "refs/tags/"))]
        if mirrored:
            return [
                f"{ref} belongs to this repository's mirror: branches and tags change only through its "
                f"syncs, and {ref} would come back at the next one. Remove it upstream, or stop mirroring "
                f"first"
                for ref in mirrored
            ]
    # The policy the hooks run, asked as pre-receive asks it (repos.gitaccess.policy).
    updates = [Update(e.oid, zero_like(e.oid), e.ref) for e in entries]
    req = GitRequest(
        repository=repo,
        user=actor,
        role="admin",
        service="receive-pack",
        commands=tuple((u.old, u.new, u.ref) for u in updates),
    )
    return gitaccess.check_updates(req, updates)


def _refused(reasons: list[str]) -> Forbidden:
    shown = "; ".join(reasons[:5]) + (f"; and {len(reasons) - 5} more" if len(reasons) > 5 else "")
    return Forbidden(f"Nothing was removed: {shown}.", code="refused_by_policy")


# --- removing --------------------------------------------------------------------------------------


def _noop(repo: Repository, entries: list[RefEntry]) -> None:
    return None


# Called between reading the refs and deleting them, under the lock: tests move a ref here to
# see compare-and-delete keep it (as a concurrent push would).
before_delete: Callable[[Repository, list[RefEntry]], None] = _noop


def _check_actor(repo: Repository, actor, via: str) -> None:
    if via not in VIA:
        raise InvalidInput(f"unknown channel {str(via)[:20]!r}")
    if not selectors.can_admin(actor, repo):
        raise Forbidden("Only the repository's admins may remove refs.")


def _delete(repo: Repository, entries: list[RefEntry], *, actor, via: str) -> Removal:
    """Policy, compare-and-delete, record. Called under the repository's lock."""
    reasons = _refusals(repo, actor, entries)
    if reasons:
        raise _refused(reasons)
    before_delete(repo, entries)
    # no_deref: a symbolic ref (refs/remotes/origin/HEAD) goes, not the branch it points at.
    deletion = RefTransaction(repo.disk_path)
    for e in entries:
        deletion.delete(e.ref, old=e.oid)
    try:
        deletion.commit()
    except RefTransactionFailed as exc:
        detail = exc.stderr.strip().splitlines()
        raise Conflict(
            "A ref changed while it was being removed (a push landed), so nothing was removed; "
            "reload and try again. " + (detail[0][:300] if detail else ""),
            code="ref_moved",
        ) from None
    updates = [Update(e.oid, zero_like(e.oid), e.ref) for e in entries]
    with transaction.atomic():
        push = push_record(repo=repo, pusher=actor, updates=updates, protocol=via)
        record_audit(
            actor=actor,
            action=Action.REF_REMOVE,
            repository=repo,
            detail={"refs": {text_refname(e.ref): e.oid for e in entries}, "via": via},
        )
    return Removal(entries, push)


def ref_remove(
    *, repo: Repository, refs: Sequence[str], actor, via: str, expected: Mapping[str, str] | None = None
) -> Removal:
    """Remove the named refs, all or none. `expected` (ref -> id, optional) is what the admin
    saw: a ref that points elsewhere now is not removed (Conflict)."""
    _check_actor(repo, actor, via)
    names = _names(refs)
    wanted = set(names)
    patterns = sorted({namespace_of(ref) for ref in names})
    with repository_lock(repo.pk, purpose=f"ref removal by {actor.username}", timeout=30):
        # Seek to the namespaces named rather than read every ref (100k workspace refs).
        found = {
            e.ref: e
            for e in read_refs(repo, patterns if len(patterns) <= 256 else ["refs/"])
            if e.ref in wanted
        }
        missing = [ref for ref in names if ref not in found]
        if missing:
            ref = missing[0]
            if not is_valid_refname(ref):
                raise InvalidInput(f"{ref[:80]!r} is not a valid ref name.", fields={"refs": ["invalid"]})
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise NotFound(f"{ref} does not exist{more}; nothing was removed.", code="no_such_ref")
        for ref, oid in (expected or {}).items():
            if ref in found and found[ref].oid != oid:
                raise Conflict(
                    f"{ref} points at {found[ref].oid[:12]} now, not {str(oid)[:12]}: it moved since "
                    f"you looked, so nothing was removed.",
                    code="ref_moved",
                )
        return _delete(repo, [found[ref] for ref in names], actor=actor, via=via)


def namespace_remove(*, repo: Repository, prefix: str, actor, via: str) -> Removal:
    """Remove every ref under `prefix` (refs/pull/ ...), all or none."""
    _check_actor(repo, actor, via)
    bare = parse_prefix(prefix)
    with repository_lock(repo.pk, purpose=f"ref removal by {actor.username}", timeout=30):
        entries = [e for e in read_refs(repo, [bare]) if under(e.ref, bare)]
        if not entries:
            raise NotFound(f"There are no refs under {bare}/.", code="no_such_ref")
        return _delete(repo, entries, actor=actor, via=via)


def name_to_ref(kind: str, name: str) -> str:
    """A branch or tag name as the page's form gives it, as a full ref name."""
    prefix = {"branch": "refs/heads/", "tag": "refs/tags/"}.get(kind)
    if prefix is None or not isinstance(name, str) or not name.strip():
        raise InvalidInput("Give a branch or tag name.", fields={"name": ["required"]})
    name = name.strip()
    return name if name.startswith(prefix) else prefix + name
