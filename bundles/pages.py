"""The Bundles page: what is published, the build history (with progress while a build runs),
and the offload figure: bytes served from bundles against bytes served by git."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from bundles import selectors
from bundles.models import BuildState, BundleBuild, Flavor
from repos import enqueue
from repos import selectors as repo_selectors
from repos.models import DailyTransfer
from repos.views import admin_repo_or_404, repo_or_404

DAYS = 30
CHART_W, CHART_H = 600, 160


def offload(repo, days: int = DAYS) -> dict:
    """Per-day and total bytes from git and from bundles, and the offloaded share.

    Bundle bytes are what the app served itself when it did (file storage), otherwise what
    bundle lists sent clients to fetch (S3/CDN, which the app does not see)."""
    since = timezone.now().date() - timedelta(days=days - 1)
    rows = {r.day: r for r in DailyTransfer.objects.filter(repository=repo, day__gte=since)}
    series: list[dict[str, Any]] = []
    for i in range(days):
        day = since + timedelta(days=i)
        row = rows.get(day)
        git = row.git_bytes if row else 0
        bundle = (row.bundle_bytes_served or row.bundle_bytes_listed) if row else 0
        series.append({"day": day, "git": git, "bundle": bundle})
    total_git = sum(d["git"] for d in series)
    total_bundle = sum(d["bundle"] for d in series)
    total = total_git + total_bundle
    peak = max((d["git"] + d["bundle"] for d in series), default=0) or 1
    bar_w = CHART_W / days
    for i, d in enumerate(series):
        d["x"] = round(i * bar_w + 1, 1)
        d["w"] = round(bar_w - 2, 1)
        d["h_bundle"] = round(d["bundle"] / peak * (CHART_H - 20), 1)
        d["h_git"] = round(d["git"] / peak * (CHART_H - 20), 1)
        d["y_bundle"] = round(CHART_H - d["h_bundle"], 1)
        d["y_git"] = round(CHART_H - d["h_bundle"] - d["h_git"], 1)
    return {
        "series": series,
        "git": total_git,
        "bundle": total_bundle,
        "share": (100.0 * total_bundle / total) if total else None,
        "width": CHART_W,
        "height": CHART_H,
    }


def bundles_page(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    builds = list(BundleBuild.objects.filter(repository=repo).order_by("-started_at")[:20])
    running = any(b.state == BuildState.RUNNING for b in builds)
    return render(
        request,
        "bundles/page.html",
        {
            "repo": repo,
            "tab": "bundles",
            "generations": [(flavor.label, selectors.current_generation(repo, flavor)) for flavor in Flavor],
            "builds": builds,
            "running": running,
            "offload": offload(repo),
            "is_admin": repo_selectors.can_admin(request.user, repo),
            "clone_url": request.build_absolute_uri(f"/{repo.owner.username}/{repo.name}.git"),
        },
    )


@login_required
@require_POST
def build_now(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    enqueue.send("bundles.tasks.build_bundles", repo.pk)
    messages.success(request, "A bundle build was queued.")
    return redirect("bundles-page", owner=repo.owner.username, name=repo.name)
