"""Rename, transfer, delete (admins) and restore (staff) a repository: repos.lifecycle does it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from repos import lifecycle, selectors
from repos.errors import ServiceError
from repos.views import admin_repo_or_404, repo_or_404


def _back_to_settings(repo):
    return redirect("repository-settings", owner=repo.owner.username, name=repo.name)


@login_required
@require_POST
def repository_rename(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    try:
        lifecycle.repository_move(
            repo=repo, acting_user=request.user, new_name=request.POST.get("name", "").strip()
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Renamed to {repo.full_name}; the old URLs redirect here.")
    return _back_to_settings(repo)


@login_required
@require_POST
def repository_transfer(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    new_owner = selectors.user_by_name(request.POST.get("owner", "").strip())
    if new_owner is None:
        messages.error(request, f"No user named '{request.POST.get('owner', '')}'.")
        return _back_to_settings(repo)
    try:
        lifecycle.repository_move(repo=repo, acting_user=request.user, new_owner=new_owner)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _back_to_settings(repo)
    messages.success(request, f"Transferred to {repo.full_name}; the old URLs redirect here.")
    return redirect("repository", owner=repo.owner.username, name=repo.name)


@login_required
@require_POST
def repository_delete(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    if request.POST.get("confirm", "").strip() != repo.full_name:
        messages.error(request, f"Type {repo.full_name} to confirm the deletion.")
        return _back_to_settings(repo)
    lifecycle.repository_soft_delete(repo=repo, acting_user=request.user)
    messages.success(
        request,
        f"Deleted {repo.full_name}. Site staff can restore it until {lifecycle.purge_after(repo):%Y-%m-%d}.",
    )
    return redirect("home")


@login_required
@require_POST
def repository_restore(request, owner: str, name: str):
    if not request.user.is_staff:
        raise Http404
    repo = repo_or_404(request, owner, name)
    lifecycle.repository_restore(repo=repo, acting_user=request.user)
    messages.success(request, f"Restored {repo.full_name}.")
    return redirect("repository", owner=repo.owner.username, name=repo.name)
