"""An import's page (state, live progress, the report, why it failed) and its Cancel button.

Seen by who asked for the import, the repository's admins and staff; everyone else gets 404,
anonymous visitors too (no sign-in redirect that would confirm the import exists). After a
failure or a cancel the repository is gone, and this page is where the requester reads why.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from repos import selectors
from repos.errors import ServiceError
from sources import import_requests, importing


def _import_or_404(request, import_id: int):
    imp = import_requests.import_for(request.user, import_id)
    if imp is None:
        raise Http404
    return imp


def import_context(user, imp) -> dict:
    repo = imp.repository
    return {
        "imp": imp,
        "repo": repo,
        "report": importing.ImportReport.from_dict(imp.report),
        "can_cancel": imp.active,
        "repo_readable": repo is not None and selectors.can_read(user, repo),
    }


def import_detail(request, import_id: int):
    imp = _import_or_404(request, import_id)
    return render(request, "sources/import.html", import_context(request.user, imp))


@require_POST
def import_cancel(request, import_id: int):
    imp = _import_or_404(request, import_id)
    try:
        imp = import_requests.import_cancel(imp=imp, actor=request.user)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        done = "Cancelled." if not imp.active else "Cancelling: git stops within a second."
        messages.success(request, done)
    return redirect("import", import_id=imp.pk)


# Routes of this page family; sources/urls.py splices them in ("imports" is a reserved name).
urlpatterns: list = [
    path("imports/<int:import_id>", import_detail, name="import"),
    path("imports/<int:import_id>/cancel", import_cancel, name="import-cancel"),
]
