"""Writes and reads around the object checks: recording accepted legacy objects, the summary
admins see, and staff's per-repository overrides (append-only, so the rows are the audit)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count

from gitcore.git import run_git
from repos import objectcheck, selectors
from repos.errors import Forbidden, InvalidInput
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
    out = run_git(
        ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        repo=repo.disk_path,
        input="".join(f"{oid}\n" for oid in oids).encode(),
    ).text
    present = {line.split(" ", 1)[0] for line in out.splitlines() if not line.endswith(" missing")}
    rows = [
        LegacyObject(repository=repo, oid=oid, msg_id=msg_id, source=source)
        for oid, msg_id in sorted(wanted)
        if oid in present
    ]
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
    # Counted in the database: the repository page asks on every view by an admin, and an
    # imported history may carry 100k rows.
    rows = LegacyObject.objects.filter(repository=repo)
    counts = rows.values_list("msg_id").annotate(n=Count("id")).order_by()
    total = rows.values("oid").distinct().count() if counts else 0
    return LegacySummary(total, sorted(counts, key=lambda kv: (-kv[1], kv[0])))


def legacy_examples(repo: Repository, msg_ids, *, per_check: int = 3) -> dict[str, list[str]]:
    """A few object ids (the first recorded) for each of these message ids."""
    return {
        msg_id: list(
            LegacyObject.objects.filter(repository=repo, msg_id=msg_id)
            .order_by("id")
            .values_list("oid", flat=True)[:per_check]
        )
        for msg_id in msg_ids
    }


@transaction.atomic
def override_set(*, repo: Repository, msg_id: str, severity: str, actor, reason: str) -> ObjectCheckOverride:
    """Staff only: set one message id's severity for this repository ("" for the default)."""
    if actor is None or not actor.is_active or not actor.is_staff:
        raise Forbidden("Only site staff may change the object checks of a repository.")
    check = objectcheck.check_for(msg_id)
    if check is None:
        raise InvalidInput(f"{str(msg_id)[:64]!r} is not an object check.", fields={"msg_id": ["unknown"]})
    if check not in objectcheck.known_checks():
        raise InvalidInput(f"The installed git does not know {check.msg_id}.", fields={"msg_id": ["unknown"]})
    severity = (severity or "").strip()
    if severity and severity not in objectcheck.SEVERITIES:
        raise InvalidInput(
            "Severity is error, warn, ignore, or empty for the default.", fields={"severity": ["invalid"]}
        )
    if severity and severity != "error" and check.msg_id.lower() in objectcheck.FATAL:
        raise InvalidInput(
            f"git cannot accept objects that fail {check.msg_id}.", fields={"severity": ["fatal"]}
        )
    reason = (reason or "").strip()
    if not reason or len(reason) > 2000:
        raise InvalidInput("Say why (at most 2000 characters).", fields={"reason": ["required"]})
    return ObjectCheckOverride.objects.create(
        repository=repo, msg_id=check.msg_id, severity=severity, actor=actor, reason=reason
    )


def overrides_history(repo: Repository):
    return ObjectCheckOverride.objects.filter(repository=repo).select_related("actor").order_by("-id")


# --- who sees and changes them ---------------------------------------------------------------


def is_staff(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


def may_view(user, repo: Repository) -> bool:
    """The repository's admins and site staff see its checks and legacy objects."""
    return selectors.can_admin(user, repo) or is_staff(user)


def checks_in_force(repo: Repository) -> list[dict]:
    """Every check the installed git knows, with the severity in force for this repository."""
    in_force = objectcheck.severities(objectcheck.repository_overrides(repo))
    return [
        {
            "msg_id": check.msg_id,
            "decision": check.decision,
            "default": check.severity,
            "severity": in_force[check.msg_id],
            "overridden": in_force[check.msg_id] != check.severity,
            "why": check.why,
        }
        for check in objectcheck.known_checks()
    ]


def legacy_report(repo: Repository) -> tuple[LegacySummary, list[dict]]:
    """The summary, and per check its count and a few example object ids."""
    summary = legacy_summary(repo)
    examples = legacy_examples(repo, [msg_id for msg_id, _ in summary.by_check])
    return summary, [
        {"msg_id": msg_id, "count": count, "examples": examples[msg_id]} for msg_id, count in summary.by_check
    ]
