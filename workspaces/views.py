"""Workspace pages: who is working on a repository, one user's refs, one ref's changes."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from gitcore.git import is_valid_refname
from repos.errors import Forbidden, InvalidInput, ServiceError
from repos.hooks import refspace
from repos.views import admin_repo_or_404, repo_or_404
from repos.views.diffs import diff_context
from workspaces import browse, ref_links, refmigration, selectors, services
from workspaces.models import ArchivedRef, ProtectedBranch, Workspace

REFS_PER_PAGE = 50


def workspaces_index(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    entries = selectors.visible_workspaces(request.user, repo)
    return render(request, "workspaces/index.html", {"repo": repo, "entries": entries, "tab": "workspaces"})


def workspace_user(request, owner: str, name: str, username: str, *, status: int = 200):
    repo = repo_or_404(request, owner, name)
    if not selectors.visible_to(request.user, repo, username):
        raise Http404
    # A taken-down workspace shows its owner and the admins its flags only.
    shown = selectors.content_visible(request.user, repo, username)
    # Up to 1000 refs a user: ahead/behind costs a git process per ref, so per page only.
    listed = browse.user_refs(repo, username) if shown else []
    page = Paginator(listed, REFS_PER_PAGE).get_page(request.GET.get("page"))
    row = Workspace.objects.filter(repository=repo, user__username=username).first()
    archived = (
        ArchivedRef.objects.filter(repository=repo, username=username).exclude(
            state=ArchivedRef.State.EXPIRED
        )[:50]
        if shown
        else []
    )
    if row is None and not page.object_list and not archived:
        raise Http404  # no such workspace: answered as a hidden one is, so neither tells
    may_restore = selectors.may_restore(request.user, repo, username)
    refusal = selectors.write_refusal(repo, username, actor=request.user, what="restoring a deleted ref")
    refs = browse.with_counts(repo, list(page.object_list))
    return render(
        request,
        "workspaces/user.html",
        {
            "repo": repo,
            "username": username,
            "refs": refs,
            **_ref_notes(request, repo, username, refs),
            "page": page,
            "state": row.state if row else "active",
            "flag_labels": row.flag_labels if row else [],
            "workspace": row,
            "tab": "workspaces",
            "archived": archived,
            "may_restore": may_restore and not refusal,
            "restore_refusal": refusal if may_restore else None,
            "withheld": not shown,
        },
        status=status,
    )


@login_required
@require_POST
def archived_restore(request, owner: str, name: str, pk: int):
    """Bring back a workspace ref that cleanup deleted (its owner, or an admin). A refusal by
    the workspace's moderation flags answers 403 with the workspace page and its reason."""
    repo = repo_or_404(request, owner, name)
    archived = ArchivedRef.objects.filter(repository=repo, pk=pk).first()
    if archived is None or not selectors.visible_to(request.user, repo, archived.username):
        raise Http404
    try:
        ref = services.archived_ref_restore(
            archived=archived, user=request.user, name=request.POST.get("name") or None
        )
        messages.success(request, f"Restored {ref}.")
    except Forbidden as exc:
        messages.error(request, exc.message)
        return workspace_user(request, owner, name, archived.username, status=403)
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect("workspace-user", owner=repo.owner.username, name=repo.name, username=archived.username)


@dataclass(frozen=True)
class RefNote:
    proposal: int | None  # the number of its open proposal
    stale: bool  # its tip is on the default branch already: nothing to propose


def _ref_notes(request, repo, username: str, refs: list[browse.WorkspaceRef]) -> dict:
    """What the page shows beside each ref (counted: browse.with_counts): its open proposal (a
    link), or for its owner a "Propose" link; a ref with no commit the default branch lacks is
    stale (workspaces.stale), with nothing to propose."""
    proposals = ref_links.open_proposals(repo, request.user, [r.ref for r in refs])
    own = request.user.is_authenticated and request.user.username == username
    return {
        "rows": [(r, RefNote(proposals.get(r.ref), r.ahead == 0)) for r in refs],
        "may_propose": own,
        # Back to the workspace page after a cleanup: a cleaned-up ref's own page is gone.
        "cleanup_next": reverse("workspace-user", args=[repo.owner.username, repo.name, username]),
        "cleanup_refusal": (
            selectors.write_refusal(repo, username, actor=request.user, what="cleaning up refs")
            if own
            else None
        ),
    }


def workspace_ref(request, owner: str, name: str, username: str, refname: str):
    repo = repo_or_404(request, owner, name)
    if not selectors.visible_to(request.user, repo, username):
        raise Http404
    ref = refspace.workspace_ref(username, refname)
    if not is_valid_refname(ref):
        raise Http404
    current = browse.user_ref(repo, username, ref)
    if current is None:
        # A nameless head renamed to the current layout: links to its old name still work.
        renamed = refmigration.renamed_to(repo, ref)
        if renamed is not None and refspace.owner_of(renamed) == username:
            return redirect(
                "workspace-ref", repo.owner.username, repo.name, username, refspace.workspace_name(renamed)
            )
        raise Http404
    counted = browse.with_counts(repo, [current])[0]
    commits = browse.ref_commits(repo, ref)
    base = browse.merge_base(repo, ref)
    return render(
        request,
        "workspaces/ref.html",
        {
            "repo": repo,
            "username": username,
            "ref": counted,
            **_ref_notes(request, repo, username, [counted]),
            "commits": commits,
            "base": base,
            "tab": "workspaces",
            **diff_context(request, repo.disk_path, base, current.sha),
        },
    )


@login_required
def workspace_settings(request, owner: str, name: str):
    """Branch protection and workspace rules (repository admins)."""
    repo = admin_repo_or_404(request, owner, name)
    ws = selectors.workspace_settings(repo)
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "settings":
                limit = (request.POST.get("ref_limit") or "").strip()
                if limit and not limit.isdigit():
                    raise InvalidInput("The ref limit is a whole number.")
                services.workspace_settings_update(
                    repo=repo,
                    maintainers_may_edit=request.POST.get("maintainers_may_edit") == "on",
                    ref_limit=int(limit) if limit else None,
                    clear_ref_limit=not limit,
                    delete_merged_refs=request.POST.get("delete_merged_refs") == "on",
                    branch_pushes_to_workspace=request.POST.get("branch_pushes_to_workspace") == "on",
                )
                messages.success(request, "Workspace settings saved.")
            elif action == "protect":
                approvals = (request.POST.get("required_approvals") or "0").strip()
                if not approvals.isdigit():
                    raise InvalidInput("Required approvals is a whole number.")
                services.protected_branch_set(
                    repo=repo,
                    name=request.POST.get("branch", ""),
                    allow_force=request.POST.get("allow_force") == "on",
                    required_approvals=int(approvals),
                    require_code_owners=request.POST.get("require_code_owners") == "on",
                    required_checks=request.POST.get("required_checks", "")[:20_000],
                )
                messages.success(request, "Branch protection saved.")
            elif action == "protect-tags":
                services.workspace_settings_update(
                    repo=repo, protected_tags=request.POST.get("protected_tags", "")[:30_000]
                )
                messages.success(request, "Tag protection saved.")
            elif action == "unprotect":
                services.protected_branch_remove(repo=repo, name=request.POST.get("branch", ""))
                messages.success(request, "Branch protection removed.")
        except ServiceError as exc:
            messages.error(request, exc.message)
        return redirect("workspace-settings", owner=repo.owner.username, name=repo.name)
    return render(
        request,
        "workspaces/settings.html",
        {
            "repo": repo,
            "ws": ws,
            "site_limit": settings.WORKSPACE_REF_LIMIT,
            "archive_days": settings.WORKSPACE_ARCHIVE_DAYS,
            "protected": ProtectedBranch.objects.filter(repository=repo),
        },
    )
