"""The target branch's merge rules (workspaces.models.ProtectedBranch), asked of one proposal:
what is still missing before it may be merged. Read when asked, never cached: approvals and
statuses change without a push.

- Approvals count on the current revision only: one given to an earlier head is stale, and the
  author's own never counts (services refuse it anyway).
- Code owners (CODEOWNERS on the target branch): each changed file that has owners needs a
  current approval from one of them. Only people who may approve (maintainers) can give it, as
  GitHub asks code owners for write access.
- Required checks: the head commit's CommitStatus for each required context must be success;
  no status yet counts as pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from repos.models import CommitStatus
from repos.models.statuses import StatusState
from reviews import codeowners
from reviews.models import Approval, Proposal, ProposalRevision
from reviews.selectors import latest_revision
from workspaces.models import ProtectedBranch


@dataclass(frozen=True)
class Missing:
    code: str  # approvals | code_owners | checks_failing | checks_pending
    message: str


@dataclass
class Verdict:
    required_approvals: int = 0
    approvals: int = 0
    # file -> its owners, for files no owner approved on the current revision
    owners_missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)  # required context -> state ("" = none yet)
    missing: list[Missing] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing

    @property
    def failing(self) -> list[str]:
        return [c for c, s in self.checks.items() if s in (StatusState.FAILURE, StatusState.ERROR)]

    @property
    def pending(self) -> list[str]:
        return [c for c, s in self.checks.items() if s in ("", StatusState.PENDING)]

    def as_fields(self) -> dict[str, list[str]]:
        """For a 409's `error.fields`: one list of messages per code."""
        out: dict[str, list[str]] = {}
        for item in self.missing:
            out.setdefault(item.code, []).append(item.message)
        return out


def protection_for(proposal: Proposal) -> ProtectedBranch | None:
    return ProtectedBranch.objects.filter(
        repository_id=proposal.repository_id, name=proposal.target_branch
    ).first()


def _current_approvers(proposal: Proposal, revision: ProposalRevision) -> set[str]:
    return set(
        Approval.objects.filter(proposal=proposal, head_sha=revision.head_sha)
        .exclude(user_id=proposal.author_id)
        .values_list("user__username", flat=True)
    )


def _code_owners_missing(proposal: Proposal, revision: ProposalRevision, approvers: set[str]) -> dict:
    path = proposal.repository.disk_path
    target = f"refs/heads/{proposal.target_branch}"
    owners = codeowners.read(path, target)
    if not owners.rules:
        return {}
    files = codeowners.changed_files(path, revision.base_sha, revision.head_sha)
    return {
        name: who
        for name, who in codeowners.owners_by_file(owners, files).items()
        if not approvers.intersection(who)
    }


def evaluate(proposal: Proposal, revision: ProposalRevision | None = None) -> Verdict:
    """What the branch's rules still ask of the proposal's latest revision (or `revision`)."""
    revision = revision or latest_revision(proposal)
    protection = protection_for(proposal)
    verdict = Verdict()
    if protection is None or revision is None:
        return verdict
    approvers = _current_approvers(proposal, revision)
    verdict.required_approvals = protection.required_approvals
    verdict.approvals = len(approvers)
    if verdict.approvals < protection.required_approvals:
        need = protection.required_approvals - verdict.approvals
        verdict.missing.append(
            Missing(
                "approvals",
                f"{need} more approval{'s' if need != 1 else ''} of revision {revision.number} "
                f"({verdict.approvals} of {protection.required_approvals}).",
            )
        )
    if protection.require_code_owners:
        verdict.owners_missing = _code_owners_missing(proposal, revision, approvers)
        for name, who in sorted(verdict.owners_missing.items())[:50]:
            verdict.missing.append(
                Missing("code_owners", f"{name}: needs approval from a code owner ({', '.join(who)}).")
            )
    contexts = [str(c) for c in protection.required_checks or []]
    if contexts:
        states = dict(
            CommitStatus.objects.filter(
                repository_id=proposal.repository_id, sha=revision.head_sha.lower(), context__in=contexts
            ).values_list("context", "state")
        )
        verdict.checks = {c: states.get(c, "") for c in contexts}
        for context in verdict.failing:
            verdict.missing.append(
                Missing("checks_failing", f"Check {context} is {verdict.checks[context]}.")
            )
        for context in verdict.pending:
            verdict.missing.append(
                Missing(
                    "checks_pending", f"Check {context} is {verdict.checks[context] or 'not reported yet'}."
                )
            )
    return verdict
