"""Pull-mirror settings of one repository (admins), and "Sync now" from the repository page."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from repos.errors import Conflict, InvalidInput, ServiceError
from repos.views import admin_repo_or_404
from sources import mirrors, selectors

# Form values longer than this are junk; the services say so without reading them whole.
_MAX_FIELD = 2000


def _field(request, name: str) -> str:
    return (request.POST.get(name) or "")[: _MAX_FIELD + 1]


# No login_required: admin_repo_or_404 answers 404 to everyone else, signed in or not, so the
# page says nothing about a private repository.
@require_http_methods(["GET", "POST"])
def mirror_settings(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    mirror = selectors.mirror_of(repo)
    typed = {"url": "", "interval_minutes": ""}
    if request.method == "POST":
        action = request.POST.get("action", "")
        typed = {
            "url": _field(request, "url"),
            "interval_minutes": _field(request, "interval_minutes").strip(),
        }
        try:
            done = _apply(request, repo, mirror, action, typed)
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, done)
            return redirect("mirror-settings", owner=repo.owner.username, name=repo.name)
        mirror = selectors.mirror_of(repo)
    return render(
        request,
        "sources/mirror_settings.html",
        {
            "repo": repo,
            "mirror": mirror,
            "typed": typed,
            "syncing": mirror is not None and mirrors.syncing(mirror),
            "min_interval": settings.MIRROR_MIN_INTERVAL_MINUTES,
            "max_interval": mirrors.MAX_INTERVAL_MINUTES,
            "default_interval": max(settings.MIRROR_INTERVAL_MINUTES, settings.MIRROR_MIN_INTERVAL_MINUTES),
        },
        status=400 if request.method == "POST" else 200,
    )


def _apply(request, repo, mirror, action: str, typed: dict) -> str:
    """Run one action and say what it did; ServiceError says why not."""
    user = request.user
    if action not in ("create", *_MIRROR_ACTIONS):
        raise InvalidInput("Unknown action.")
    if action == "create":
        created = mirrors.mirror_create(
            repo=repo, url=typed["url"], created_by=user, interval_minutes=typed["interval_minutes"] or None
        )
        mirrors.mirror_sync_request(mirror=created, actor=user)
        return f"{repo.full_name} now mirrors {created.url}; the first sync is queued."
    if mirror is None:
        raise Conflict("This repository mirrors nothing.", code="not_a_mirror")
    if action == "update":
        mirrors.mirror_update(
            mirror=mirror,
            actor=user,
            url=typed["url"] or None,
            interval_minutes=typed["interval_minutes"] or None,
        )
        return "Mirror settings saved."
    if action in ("pause", "resume"):
        mirrors.mirror_update(mirror=mirror, actor=user, enabled=action == "resume")
        return (
            "Mirroring paused: no syncs, and the branches accept pushes."
            if action == "pause"
            else "Mirroring resumed; a sync is due now."
        )
    if action == "sync":
        mirrors.mirror_sync_request(mirror=mirror, actor=user)
        return "A sync is queued."
    mirrors.mirror_delete(mirror=mirror, actor=user)
    return f"{repo.full_name} no longer mirrors {mirror.url}; it keeps its branches and tags."


_MIRROR_ACTIONS = ("update", "pause", "resume", "sync", "delete")


@require_POST
def mirror_sync(request, owner: str, name: str):
    """The repository page's "Sync now"."""
    repo = admin_repo_or_404(request, owner, name)
    mirror = selectors.mirror_of(repo)
    if mirror is None:
        messages.error(request, "This repository mirrors nothing.")
    else:
        try:
            mirrors.mirror_sync_request(mirror=mirror, actor=request.user)
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, "A sync is queued; reload the page in a moment.")
    return redirect("repository", owner=repo.owner.username, name=repo.name)


urlpatterns: list = [
    path("<str:owner>/<str:name>/settings/mirror", mirror_settings, name="mirror-settings"),
    path("<str:owner>/<str:name>/settings/mirror/sync", mirror_sync, name="mirror-sync"),
]
