"""Admins remove refs: a pull request head an import kept, a stale remote-tracking ref, a whole
`refs/imported/pull/` namespace, a branch or a tag.

What can never be removed here, and why:
- workspace refs (`refs/users/...`) follow the workspace rules and have their own pages;
- the platform's internal refs: `refs/archive/` keeps deleted workspace refs restorable,
  `refs/takedown/` holds content under a moderator's take-down;
- the default branch and protected branches, and a mirror's branches and tags (they change only
  through the mirror's syncs and would come back at the next one). The rules a push meets
  decide these: the registered push policy is asked exactly as the pre-receive hook asks it,
  so a removal here and `git push origin :<ref>` never disagree. (`refs/imported/` is allowed
  by both, but receive-pack refuses it as a hidden ref: it is removed here only.)

A removal is compare-and-delete: the refs' values are read under the repository's lock and
deleted in one `update-ref --stdin` transaction that checks each is still there. A ref a push
moved meanwhile fails the whole transaction and nothing is removed. Each removal is recorded
as a push (protocol "web" or "api", one RefUpdate per ref to the zero id), so the pushlog,
webhooks and bundle builds see it.
"""

from __future__ import annotations

import functools
import importlib.util
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings

from repos import extensions, selectors
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.git import is_valid_refname, run_git
from repos.locking import repository_lock
from repos.models import Mirror, Push, Repository
from repos.names import IMPORTED_REFS
from repos.pushes import Update, push_record

WORKSPACES = "refs/users/"
# The platform's own namespaces (workspaces.cleanup's archive, moderation's legal hold).
INTERNAL = ("refs/archive/", "refs/takedown/")
# Never listed here: workspaces have their own pages, internal refs are nobody's to remove.
UNLISTED = (WORKSPACES, *INTERNAL)
# An explicit list larger than this is refused; a namespace has no such cap (it is one
# transaction whatever its size: 5,000 refs take well under a second, tests/repos/test_refs_admin.py).
MAX_REFS = 10_000
MAX_PER_PAGE = 500
VIA = ("web", "api")


@dataclass(frozen=True)
class RefEntry:
    ref: str
    oid: str
    symref: str = ""  # the target, when the ref is symbolic (refs/remotes/origin/HEAD)


@dataclass(frozen=True)
class Namespace:
    prefix: str  # "refs/pull/", or a ref of its own outside any namespace ("refs/stash")
    count: int

    @property
    def label(self) -> str:
        return {"refs/heads/": "branches", "refs/tags/": "tags"}.get(self.prefix, "")


@dataclass(frozen=True)
class RefListing:
    prefix: str  # without its trailing slash; "" for every listed ref
    namespaces: list[Namespace]
    refs: list[RefEntry]  # this page
    total: int  # refs under prefix
    page: int
    per_page: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


@dataclass(frozen=True)
class Removal:
    removed: list[RefEntry]
    push: Push | None


# --- reading ---------------------------------------------------------------------------------------


def namespace_of(ref: str) -> str:
    """refs/pull/1/head -> refs/pull/; under refs/imported/ one level deeper (refs/imported/pull/),
    since an import keeps every namespace of its source there."""
    parts = ref.split("/")
    depth = 3 if ref.startswith(IMPORTED_REFS) else 2
    return "/".join(parts[:depth]) + "/" if len(parts) > depth else ref


def _under(ref: str, prefix: str) -> bool:
    """Component-wise: refs/pull matches refs/pull and refs/pull/1/head, never refs/pulls/x."""
    return not prefix or ref == prefix or ref.startswith(prefix + "/")


def _read(repo: Repository, patterns: Sequence[str]) -> list[RefEntry]:
    out = run_git(
        ["for-each-ref", "--format=%(objectname) %(refname) %(symref)", *patterns], repo=repo.disk_path
    ).text
    entries = []
    for line in out.splitlines():
        oid, _, rest = line.partition(" ")
        ref, _, symref = rest.partition(" ")
        if ref and not ref.startswith(UNLISTED):
            entries.append(RefEntry(ref, oid, symref))
    return entries


def refs_under(repo: Repository, prefix: str = "") -> tuple[str, list[Namespace], list[RefEntry]]:
    """The prefix as understood, every listed ref's namespace with its count, and the refs
    under the prefix (all if empty). One for-each-ref over the repository: workspace refs are
    skipped as they are read (an admin's page; 100k of them cost ~0.1 s)."""
    bare = _prefix(prefix, listing=True)
    entries = _read(repo, ["refs/"])
    counts = Counter(namespace_of(e.ref) for e in entries)
    order = {"refs/heads/": 0, "refs/tags/": 1}
    namespaces = [
        Namespace(p, n) for p, n in sorted(counts.items(), key=lambda kv: (order.get(kv[0], 2), kv[0]))
    ]
    return bare, namespaces, [e for e in entries if _under(e.ref, bare)]


def refs_list(repo: Repository, prefix: str = "", *, page: int = 1, per_page: int = 100) -> RefListing:
    """The namespaces with counts, and one page of the refs under `prefix`."""
    bare, namespaces, entries = refs_under(repo, prefix)
    per_page = max(1, min(int(per_page), MAX_PER_PAGE))
    pages = max(1, -(-len(entries) // per_page))
    page = max(1, min(int(page), pages))
    start = (page - 1) * per_page
    return RefListing(bare, namespaces, entries[start : start + per_page], len(entries), page, per_page)


# --- validating ------------------------------------------------------------------------------------


def _plausible(value: str) -> bool:
    """The checks that need no git: a full name under refs/, short, no control characters."""
    return (
        value.startswith("refs/")
        and len(value.encode()) <= 255
        and not value.endswith("/")
        and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
    )


def _not_removable(ref: str) -> str | None:
    """Why a name (ref or namespace) is never removed here, or None."""
    if ref == WORKSPACES.rstrip("/") or ref.startswith(WORKSPACES):
        return (
            f"{ref} is a workspace ref: workspaces follow the workspace rules and have their own pages "
            f"(an admin may also delete one by push: git push origin :{ref})"
        )
    if any(ref == p.rstrip("/") or ref.startswith(p) for p in INTERNAL):
        return (
            f"{ref} is internal to the platform (refs/archive/ keeps deleted workspace refs restorable, "
            f"refs/takedown/ holds content under a moderator's take-down): nobody removes it by hand"
        )
    return None


def _prefix(value, *, listing: bool = False) -> str:
    """A namespace as given ("refs/pull/" or "refs/pull"), without its trailing slash."""
    if not isinstance(value, str):
        raise InvalidInput("A prefix is a string such as refs/pull/.", fields={"prefix": ["invalid"]})
    bare = value.strip()
    if bare.endswith("/"):
        bare = bare[:-1]
    if not bare and listing:
        return ""
    if bare.count("/") < 1 or not _plausible(bare) or not is_valid_refname(bare):
        raise InvalidInput(
            f"{value[:80]!r} is not a ref namespace: give one such as refs/pull/.",
            fields={"prefix": ["invalid"]},
        )
    why = _not_removable(bare)
    if why:
        raise InvalidInput(why, fields={"prefix": ["not_removable"]})
    return bare


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
        if not isinstance(ref, str) or not _plausible(ref):
            shown = ref[:80] if isinstance(ref, str) else type(ref).__name__
            raise InvalidInput(
                f"{shown!r} is not a ref name: give full names such as refs/pull/1/head.",
                fields={"refs": ["invalid"]},
            )
    names = list(dict.fromkeys(refs))  # dedupe, keep the order
    for ref in names:
        why = _not_removable(ref)
        if why:
            raise InvalidInput(why, fields={"refs": ["not_removable"]})
    return names


# --- the rules a push meets ------------------------------------------------------------------------


class _PolicyUpdate:
    """What the push policy reads of an update (the hook's own Update, repos/hooks/pre_receive.py)."""

    __slots__ = ("new", "old", "ref")

    def __init__(self, old: str, new: str, ref: str):
        self.old, self.new, self.ref = old, new, ref

    @property
    def is_create(self) -> bool:
        return set(self.old) == {"0"}

    @property
    def is_delete(self) -> bool:
        return set(self.new) == {"0"}


@functools.cache
def _policy_module(path: str):
    # The installed policy is a standalone file (workspaces registers its own): load it the way
    # the hook does, without repos importing another app.
    spec = importlib.util.spec_from_file_location("hostsite_refs_admin_policy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    policy = _policy_module(str(extensions.push_policy_source()))
    updates = [_PolicyUpdate(e.oid, "0" * len(e.oid), e.ref) for e in entries]
    env = extensions.hook_environment(repo, actor, "admin", [(u.old, u.new, u.ref) for u in updates])
    rules = policy.Rules.from_env(env) if hasattr(policy, "Rules") else None
    return policy.decide_all(
        role="admin",
        pusher=actor.username,
        updates=updates,
        rules=rules,
        is_ancestor=lambda _old, _new: False,
        workspace_ref_count=lambda _user: 0,
    )


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
    lines = ["start", *(f"delete {e.ref} {e.oid}" for e in entries), "prepare", "commit"]
    # --no-deref: a symbolic ref (refs/remotes/origin/HEAD) goes, not the branch it points at.
    result = run_git(
        ["update-ref", "--no-deref", "--stdin"],
        repo=repo.disk_path,
        input="".join(f"{line}\n" for line in lines).encode(),
        check=False,
        timeout=settings.GIT_TIMEOUT,
    )
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise Conflict(
            "A ref changed while it was being removed (a push landed), so nothing was removed; "
            "reload and try again. " + (detail[0][:300] if detail else ""),
            code="ref_moved",
        )
    updates = [Update(e.oid, "0" * len(e.oid), e.ref) for e in entries]
    push = push_record(repo=repo, pusher=actor, updates=updates, protocol=via)
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
            e.ref: e for e in _read(repo, patterns if len(patterns) <= 256 else ["refs/"]) if e.ref in wanted
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
    bare = _prefix(prefix)
    with repository_lock(repo.pk, purpose=f"ref removal by {actor.username}", timeout=30):
        entries = [e for e in _read(repo, [bare]) if _under(e.ref, bare)]
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
