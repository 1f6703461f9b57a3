"""The object checks page of a repository (repos/objectcheck.py): the checks in force, the legacy
objects its history carries, and staff's overrides with their reasons. Repository admins and
site staff see it; only staff may change a check (an audited override). Everyone else gets 404,
public repository or not."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods

from repos import objectcheck, objectcheck_services
from repos.errors import ServiceError
from repos.views import repo_or_404


def checks_repo_or_404(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    if not objectcheck_services.may_view(request.user, repo):
        raise Http404
    return repo


@require_http_methods(["GET", "POST"])
def object_checks(request, owner: str, name: str):
    repo = checks_repo_or_404(request, owner, name)
    here = reverse("repository-object-checks", args=[repo.owner.username, repo.name])
    if request.method == "POST":
        fields = {key: request.POST.get(key, "") for key in ("msg_id", "severity", "reason")}
        try:
            row = objectcheck_services.override_set(repo=repo, actor=request.user, **fields)
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request, f"{row.msg_id} is now {row.severity or 'back to the default'} for {repo.full_name}."
            )
        return redirect(here)
    summary, legacy = objectcheck_services.legacy_report(repo)
    return render(
        request,
        "repos/object_checks.html",
        {
            "repo": repo,
            "checks": objectcheck_services.checks_in_force(repo),
            "summary": summary,
            "legacy": legacy,
            "overrides": objectcheck_services.overrides_history(repo)[:200],
            "can_change": objectcheck_services.is_staff(request.user),
            "severities": objectcheck.SEVERITIES,
            "here": here,
        },
    )


urlpatterns: list = [
    path("<str:owner>/<str:name>/settings/object-checks", object_checks, name="repository-object-checks"),
]
