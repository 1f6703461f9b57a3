"""Writes and reads around the object checks: recording accepted legacy objects, the summary
admins see, and staff's per-repository overrides (append-only, so the rows are the audit)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db import transaction

from repos import objectcheck
from repos.errors import Forbidden, InvalidInput
from repos.git import run_git
from repos.models import LegacyObject, ObjectCheckOverride, Repository

MAX_RECORDED = 100_000  # per arrival; a history with more is summarised by what was recorded


def record_legacy(repo: Repository, messages: list[objectcheck.FsckMessage], *, source: str) -> int:
    """Record the accepted (warning) findings whose objects are really in the repository now.

    The existence check matters for pushes, whose messages are read from the client-bound
    stream: only objects that landed are recorded. Returns how many rows were new."""
    wanted = {(m.oid, m.msg_id) for m in messages if not m.refused}
    if not wanted:
        return 0
    oids = sorted({oid for oid, _ in wanted})[:MAX_RECORDED]
    out = run_git(["cat-file", "--batch-check=%(objectname) %(objecttype)"], repo=repo.disk_path,
                  input="".join(f"{oid}\n" for oid in oids).encode()).text
    present = {line.split(" ", 1)[0] for line in out.splitlines() if not line.endswith(" missing")}
    rows = [LegacyObject(repository=repo, oid=oid, msg_id=msg_id, source=source)
            for oid, msg_id in sorted(wanted) if oid in present]
    before = LegacyObject.objects.filter(repository=repo).count()
    LegacyObject.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
    return LegacyObject.objects.filter(repository=repo).count() - before


@dataclass(frozen=True)
class LegacySummary:
    total: int  # distinct objects
    by_check: list[tuple[str, int]]  # (msg_id, objects), most first

    def __bool__(self) -> bool:
        return self.total > 0

    @property
    def text(self) -> str:
        parts = ", ".join(f"{msg_id} ({count:,})" for msg_id, count in self.by_check)
        noun = "object" if self.total == 1 else "objects"
        return f"This history contains {self.total:,} {noun} in legacy formats: {parts}."


def legacy_summary(repo: Repository) -> LegacySummary:
    rows = list(LegacyObject.objects.filter(repository=repo).values_list("oid", "msg_id"))
    counts = Counter(msg_id for _, msg_id in rows)
    return LegacySummary(len({oid for oid, _ in rows}), sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@transaction.atomic
def override_set(*, repo: Repository, msg_id: str, severity: str, actor, reason: str) -> ObjectCheckOverride:
    """Staff only: set one message id's severity for this repository ("" for the default)."""
    if actor is None or not actor.is_active or not actor.is_staff:
        raise Forbidden("Only site staff may change the object checks of a repository.")
    check = objectcheck.check_for(msg_id)
    if check is None:
        raise InvalidInput(f"{msg_id!r} is not an object check.", fields={"msg_id": ["unknown"]})
    if check not in objectcheck.known_checks():
        raise InvalidInput(f"The installed git does not know {check.msg_id}.", fields={"msg_id": ["unknown"]})
    severity = (severity or "").strip()
    if severity and severity not in objectcheck.SEVERITIES:
        raise InvalidInput("Severity is error, warn, ignore, or empty for the default.",
                           fields={"severity": ["invalid"]})
    if severity and severity != "error" and check.msg_id.lower() in objectcheck.FATAL:
        raise InvalidInput(f"git cannot accept objects that fail {check.msg_id}.", fields={"severity": ["fatal"]})
    reason = (reason or "").strip()
    if not reason or len(reason) > 2000:
        raise InvalidInput("Say why (at most 2000 characters).", fields={"reason": ["required"]})
    return ObjectCheckOverride.objects.create(repository=repo, msg_id=check.msg_id, severity=severity,
                                              actor=actor, reason=reason)


def overrides_history(repo: Repository):
    return ObjectCheckOverride.objects.filter(repository=repo).select_related("actor").order_by("-id")
