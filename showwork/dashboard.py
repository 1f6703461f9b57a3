"""The dashboard: a signed-in person's queue across every repository they may read.

- review requests for them; their own open proposals and where each stands; open proposals on
  repositories they maintain that lack their approval of the current head (reviews.queues);
- their workspace refs without a proposal, each with a "Propose" link to the prefilled form;
- their stale workspace refs (tip already on the default branch, workspaces.stale), each with a
  cleanup button, and one for all of them.

Every section is capped and says how many more there are. Workspace refs cost two git processes
per repository (for-each-ref of the workspace, and the same with an ancestry filter), for at
most REPO_CAP repositories, the most recently pushed to first: never one per ref.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from repos.errors import ServiceError
from repos.models import Repository
from repos.selectors import can_read
from repos.visibility import view_for
from reviews import queues
from workspaces import browse, stale
from workspaces.models import Workspace
from workspaces.selectors import write_refusal

REPO_CAP = 20  # repositories whose workspace refs one page reads
CLEANUP_REFS_MAX = 200  # refs one cleanup request may name


@dataclass(frozen=True)
class RefRow:
    repo: Repository
    ref: browse.WorkspaceRef
    refusal: str | None = None  # why its owner may not clean it up (a moderated workspace)


@dataclass
class WorkspaceRefs:
    unproposed: queues.Section = field(default_factory=queues.Section)
    stale: queues.Section = field(default_factory=queues.Section)
    stale_by_repo: dict[int, list[str]] = field(default_factory=dict)
    repos_more: int = 0  # repositories with workspaces not read


def _add(section: queues.Section, row: RefRow) -> None:
    section.total += 1
    section.items.append(row)


def workspace_refs(user) -> WorkspaceRefs:
    """The user's workspace refs that have no open proposal, split into stale ones and the rest."""
    found = WorkspaceRefs()
    rows = (
        Workspace.objects.filter(user=user, repository__deleted_at__isnull=True)
        .select_related("repository__owner")
        .order_by(F("last_push_at").desc(nulls_last=True), "pk")
    )
    read = 0
    for workspace in rows:
        repo = workspace.repository
        if not can_read(user, repo):
            continue
        if read == REPO_CAP:
            found.repos_more += 1
            continue
        read += 1
        view = view_for(repo, user)  # a taken-down workspace is out of its owner's sight too
        refs = [r for r in browse.user_refs(repo, user.username) if view.ref_visible(r.ref)]
        if not refs:
            continue
        on_branch = stale.stale_refs(repo, user.username)
        proposed = queues.open_proposal_numbers(repo, user, [r.ref for r in refs])
        refusal = write_refusal(repo, user.username, actor=user, what="cleaning up refs")
        for r in refs:
            if r.ref in proposed:
                continue  # listed with the user's open proposals
            if on_branch.get(r.ref) == r.sha:
                _add(found.stale, RefRow(repo, r, refusal))
                if not refusal:
                    found.stale_by_repo.setdefault(repo.pk, []).append(r.ref)
            else:
                _add(found.unproposed, RefRow(repo, r))
    for section in (found.unproposed, found.stale):
        section.items.sort(key=lambda row: row.ref.committed, reverse=True)
        section.items = section.items[: queues.SECTION_CAP]
    return found


@login_required
def dashboard(request):
    user = request.user
    readable = queues.Readable(user)
    refs = workspace_refs(user)
    return render(
        request,
        "showwork/dashboard.html",
        {
            "requests": queues.review_requests(user, readable),
            "mine": queues.own_open(user, readable),
            "awaiting": queues.awaiting(user, readable),
            "refs": refs,
            "cleanable": sum(len(v) for v in refs.stale_by_repo.values()),
        },
    )


def _next(request) -> str:
    wanted = request.POST.get("next") or ""
    if wanted.startswith("/") and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return reverse("dashboard")


def _chosen(request) -> dict[Repository, list[str]]:
    """{repository: refs} named by the form: one repository and its `ref` fields, or `all` (every
    stale ref the dashboard lists). A repository the user may not read is a 404."""
    user = request.user
    if request.POST.get("all"):
        by_repo = workspace_refs(user).stale_by_repo
        repos = Repository.objects.select_related("owner").in_bulk(list(by_repo))
        return {repos[pk]: refs for pk, refs in by_repo.items() if pk in repos}
    try:
        pk = int(request.POST.get("repository", ""))
    except ValueError:
        raise Http404 from None
    repo = Repository.objects.select_related("owner").filter(pk=pk, deleted_at__isnull=True).first()
    if repo is None or not can_read(user, repo):
        raise Http404
    return {repo: request.POST.getlist("ref")[:CLEANUP_REFS_MAX]}


@login_required
@require_POST
def stale_cleanup(request):
    """Archive stale refs of the signed-in user's own workspaces (restorable, workspaces.stale).
    A ref with an open proposal is kept: its proposal follows it."""
    done, kept, errors = [], 0, []
    for repo, refs in _chosen(request).items():
        proposed = queues.open_proposal_numbers(repo, request.user, refs)
        for ref, number in sorted(proposed.items()):
            errors.append(f"{ref} has open proposal #{number} on {repo.full_name}: it was kept.")
        wanted = [ref for ref in refs if ref not in proposed]
        try:
            archived = stale.stale_refs_archive(repo=repo, user=request.user, refs=wanted)
        except ServiceError as exc:
            errors.append(exc.message)
            continue
        done += archived
        kept += len(set(wanted)) - len(archived)
    for error in errors:
        messages.error(request, error)
    if done:
        until = min(a.expires_at for a in done)
        messages.success(
            request,
            f"Cleaned up {len(done)} stale ref{'s' if len(done) != 1 else ''}; "
            f"restore from your workspace page until {until:%Y-%m-%d}.",
        )
    if kept:
        messages.info(request, f"{kept} kept: moved since, or not on the default branch.")
    return redirect(_next(request))
