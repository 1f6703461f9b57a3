"""Importing a project from elsewhere: which refs to take, and what the import brought.

A hosted project is its HEAD, branches and tags. A source on another host carries that host's
internals too: thousands of `refs/pull/*` on a GitHub mirror, `refs/remotes/*`,
`refs/keep-around/*` (GitLab). Copied as they were, they would be advertised to every client and
nobody could delete them. So an import lists the source's refs first, takes
`refs/heads/*` and `refs/tags/*`, and reports every other namespace with its count; staff (and
the operator's CLI) may keep them with `refs=all`, moved under `refs/imported/`, which is never
advertised (workspaces/access/hiding.py).

The synchronous import (`manage.py repo create --import`, the demo repository) lives here:
`import_now` hands repos.creation the fetch as the new repository's `populate`, so repos creates
it without knowing imports exist. The web and API import is asked for in
sources.import_requests and run by Celery in sources.import_runs.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from gitcore.git import run_git
from gitcore.gittools import RefTransaction, ref_map, text_ref_map, zero_like
from repos import creation, netguard, objectcheck_services, pushes
from repos.errors import ImportFailed, InvalidInput
from repos.models import RefsMode, Repository, User, Visibility
from repos.names import IMPORTED_REFS
from sources import fetching

DEFAULT_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
# A report lists at most this many namespaces (a hostile source could send 100,000 distinct
# ones); the rest are summed under OTHER.
REPORT_NAMESPACES = 50
OTHER = "(other namespaces)"
LIST_TIMEOUT = 120
# One component of a namespace we turn into a refspec: git refuses odd ref names itself, but a
# refspec is a pattern, so nothing that could read as one (`*`, `:`, `^`...) gets that far.
_COMPONENT = re.compile(r"[A-Za-z0-9_@+=-][A-Za-z0-9._@+=-]{0,199}")


def namespace_of(ref: str) -> str:
    """`refs/pull/1/head` -> `refs/pull/`; a ref directly under refs/ (`refs/stash`) is its own."""
    if not ref.startswith("refs/"):
        return ref
    first, sep, _ = ref[len("refs/") :].partition("/")
    return f"refs/{first}/" if sep else ref


def _keepable(namespace: str) -> bool:
    rest = namespace[len("refs/") :].rstrip("/") if namespace.startswith("refs/") else ""
    return bool(_COMPONENT.fullmatch(rest)) and ".." not in rest and not rest.endswith(".lock")


def _refspec(namespace: str) -> str:
    rest = namespace[len("refs/") :]
    if namespace.endswith("/"):
        return f"+{namespace}*:{IMPORTED_REFS}{rest}*"
    return f"+{namespace}:{IMPORTED_REFS}{rest}"


def _top(counts: dict[str, int]) -> dict[str, int]:
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top = dict(ordered[:REPORT_NAMESPACES])
    rest = sum(count for _, count in ordered[REPORT_NAMESPACES:])
    if rest:
        top[OTHER] = rest
    return top


@dataclass(frozen=True)
class RefPlan:
    """What one import fetches: its refspecs, and what it takes and leaves out, counted."""

    refspecs: list[str]
    heads: int
    tags: int
    imported: dict[str, int]  # namespace -> refs kept under refs/imported/ (refs=all)
    skipped: dict[str, int]  # namespace -> refs left out
    default_branch: str | None  # the source's HEAD, if it names a branch we take

    @property
    def count(self) -> int:
        return self.heads + self.tags + sum(self.imported.values())


def _default_branch(head: str | None, branches: list[str]) -> str | None:
    # A branch name starting with '-' is a valid ref but reads as an option to git.
    usable = [b for b in branches if not b.startswith("-")]
    if head in usable:
        return head
    for name in ("main", "master"):
        if name in usable:
            return name
    return min(usable) if usable else None


def plan_refs(remote: fetching.RemoteRefs, refs_mode: str, *, display: str) -> RefPlan:
    """Decide what to fetch from the refs the source lists; ImportFailed over IMPORT_MAX_REFS."""
    if refs_mode not in RefsMode.values:
        raise InvalidInput("refs is 'default' or 'all'.", fields={"refs": ["invalid"]})
    branches: list[str] = []
    tags = 0
    others: Counter[str] = Counter()
    for ref in remote.refs:
        if ref == "HEAD":
            continue
        if ref.startswith("refs/heads/"):
            branches.append(ref[len("refs/heads/") :])
        elif ref.startswith("refs/tags/"):
            tags += 1
        else:
            others[namespace_of(ref)] += 1
    refspecs = list(DEFAULT_REFSPECS)
    imported: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for namespace, count in others.items():
        if refs_mode == RefsMode.ALL and _keepable(namespace):
            imported[namespace] = count
            refspecs.append(_refspec(namespace))
        else:
            skipped[namespace] = count
    plan = RefPlan(refspecs, len(branches), tags, imported, skipped, _default_branch(remote.head, branches))
    if plan.count > settings.IMPORT_MAX_REFS:
        raise ImportFailed(
            f"{display} has {plan.count:,} refs to import; an import may bring at most "
            f"{settings.IMPORT_MAX_REFS:,}.",
            code="too_many_refs",
        )
    return plan


def too_large(display: str) -> ImportFailed:
    cap = settings.IMPORT_MAX_SIZE // 2**20
    return ImportFailed(f"{display} is larger than the {cap:,} MiB an import may bring.", code="too_large")


@dataclass
class ImportReport:
    """What an import brought and what it left out; stored in RepositoryImport.report."""

    source: str
    default_branch: str | None
    heads: int
    tags: int
    imported: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    legacy_total: int = 0
    legacy_by_check: list[tuple[str, int]] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "default_branch": self.default_branch,
            "heads": self.heads,
            "tags": self.tags,
            "imported": _top(self.imported),
            "skipped": _top(self.skipped),
            "legacy": {"total": self.legacy_total, "by_check": [list(pair) for pair in self.legacy_by_check]},
        }

    @classmethod
    def from_dict(cls, data: dict) -> ImportReport | None:
        if not data:
            return None
        legacy = data.get("legacy") or {}
        return cls(
            data.get("source", ""),
            data.get("default_branch"),
            data.get("heads", 0),
            data.get("tags", 0),
            dict(data.get("imported") or {}),
            dict(data.get("skipped") or {}),
            legacy.get("total", 0),
            [(str(k), int(v)) for k, v in legacy.get("by_check") or []],
        )

    def lines(self) -> list[str]:
        branches = f"{self.heads:,} branch" + ("" if self.heads == 1 else "es")
        tags = f"{self.tags:,} tag" + ("" if self.tags == 1 else "s")
        head = f"; default branch: {self.default_branch}" if self.default_branch else "; no branches"
        lines = [f"Imported {branches} and {tags} from {self.source}{head}."]
        for namespace, count in _top(self.imported).items():
            target = IMPORTED_REFS + namespace[len("refs/") :] if namespace.startswith("refs/") else namespace
            noun = "ref" if count == 1 else "refs"
            lines.append(f"Kept {count:,} {noun} under {namespace} as {target} (never advertised).")
        for namespace, count in _top(self.skipped).items():
            noun = "ref" if count == 1 else "refs"
            lines.append(f"Skipped {count:,} {noun} under {namespace}.")
        if self.legacy_total:
            parts = ", ".join(f"{msg_id} ({count:,})" for msg_id, count in self.legacy_by_check)
            noun = "object" if self.legacy_total == 1 else "objects"
            lines.append(f"This history contains {self.legacy_total:,} {noun} in legacy formats: {parts}.")
        return lines


def transfer(path: Path, source: netguard.Source, plan: RefPlan, **kwargs) -> fetching.FetchResult:
    """Bring the plan's refs into the empty repository at `path`: a clone beside it (git checks
    the pack's connectivity while indexing it, a fetch would walk every object again), whose
    packs and refs are then adopted. kwargs go to fetching.clone (progress, cancel, caps)."""
    path = Path(path)
    scratch = path.parent / f".import-{path.name}-{time.time_ns()}"
    try:
        extra = plan.refspecs[len(DEFAULT_REFSPECS) :]
        result = fetching.clone(scratch, source, extra_refspecs=extra, **kwargs)
        _adopt(scratch, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def _adopt(scratch: Path, path: Path) -> None:
    refs = ref_map(scratch)
    objects, target = scratch / "objects", path / "objects"
    # A pack is found by its index: move the index last.
    for suffix in (".pack", ".rev", ".idx"):
        for pack in (objects / "pack").glob(f"pack-*{suffix}"):
            os.replace(pack, target / "pack" / pack.name)
    for fanout in objects.glob("[0-9a-f][0-9a-f]"):  # loose objects, should a source send few
        (target / fanout.name).mkdir(exist_ok=True)
        for loose in fanout.iterdir():
            os.replace(loose, target / fanout.name / loose.name)
    tx = RefTransaction(path)
    for ref, oid in refs.items():
        tx.update(ref, oid)
    tx.commit()


def finish(
    repo: Repository, plan: RefPlan, result: fetching.FetchResult, *, source: str, pusher: User | None = None
) -> ImportReport:
    """After a successful fetch: record the refs it created in the pushlog (a push by the
    importer, protocol "import", so bundles, webhooks and the pushlog see it like any ref
    change), record the accepted legacy objects, point HEAD at the source's default branch, and
    say what happened."""
    branch = plan.default_branch
    if branch and branch != repo.default_branch:
        # Before the refs are recorded: the import's change in the replication log then
        # includes HEAD, so a replica that fetches it points HEAD where the primary does.
        run_git(["symbolic-ref", "HEAD", f"refs/heads/{branch}"], repo=repo.disk_path)
        Repository.objects.filter(pk=repo.pk).update(default_branch=branch)
        repo.default_branch = branch
    _record_refs(repo, pusher)
    objectcheck_services.record_legacy(repo, result.messages, source="import")
    legacy = objectcheck_services.legacy_summary(repo)
    return ImportReport(
        source,
        repo.default_branch if plan.heads else None,
        plan.heads,
        plan.tags,
        dict(plan.imported),
        dict(plan.skipped),
        legacy.total,
        list(legacy.by_check),
    )


def _record_refs(repo: Repository, pusher: User | None) -> None:
    updates = [pushes.Update(zero_like(oid), oid, ref) for ref, oid in text_ref_map(repo.disk_path).items()]
    pushes.push_record(repo=repo, pusher=pusher, updates=updates, protocol="import", list_commits=False)


@dataclass(frozen=True)
class Imported:
    repository: Repository
    report: ImportReport


def import_now(
    *,
    owner: User,
    name: str,
    source: str,
    refs_mode: str = RefsMode.DEFAULT,
    description: str = "",
    visibility: str = Visibility.PUBLIC,
    default_branch: str | None = None,
    echo: bool = False,
) -> Imported:
    """Create `owner/name` from `source` in one go, or nothing at all (the operator's import).

    Operators may import local paths, file://, ssh:// and private addresses; the ref selection
    and the object checks are those of every import. git's progress goes to stderr with echo."""
    creation.repository_check(
        owner=owner, name=name, description=description, visibility=visibility, default_branch=default_branch
    )
    checked = netguard.prepare(source, staff=True, allow_private=True)
    remote = fetching.list_remote(checked, timeout=LIST_TIMEOUT)
    plan = plan_refs(remote, refs_mode, display=checked.display_url)
    fetched: list[fetching.FetchResult] = []

    def populate(path):
        fetched.append(transfer(path, checked, plan, echo=echo))

    # HEAD is born pointing at the default branch (`git init --initial-branch`), so `finish`
    # has nothing to move; the fetch runs before the directory is renamed into place, and a
    # failure leaves neither the row nor the directory.
    repo = creation.repository_create(
        owner=owner,
        name=name,
        description=description,
        visibility=visibility,
        default_branch=default_branch or plan.default_branch or "main",
        populate=populate,
    )
    if default_branch:
        plan = RefPlan(plan.refspecs, plan.heads, plan.tags, plan.imported, plan.skipped, default_branch)
    report = finish(repo, plan, fetched[0], source=checked.display_url, pusher=owner)
    return Imported(repo, report)
