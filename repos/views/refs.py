"""The refs settings page: admins see every ref namespace outside workspaces with its count,
page through one, and remove a ref, a whole namespace, or a branch or tag by name
(repos/refs_admin.py does the work). Everyone else gets 404."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods

from repos import refs_admin, refs_listing
from repos.errors import InvalidInput, ServiceError
from repos.views import admin_repo_or_404

PER_PAGE = 100


def _page(value) -> int:
    return int(value) if isinstance(value, str) and value.isdigit() and 0 < len(value) < 7 else 1


def _here(repo, prefix: str = "", page: int = 1) -> str:
    url = reverse("repository-refs", args=[repo.owner.username, repo.name])
    query = {**({"prefix": prefix} if prefix else {}), **({"page": page} if page > 1 else {})}
    return f"{url}?{urlencode(query)}" if query else url


def _removed(request, removal: refs_admin.Removal) -> None:
    count = len(removal.removed)
    what = removal.removed[0].ref if count == 1 else f"{count} refs"
    where = f" (push #{removal.push.pk} in the pushlog)" if removal.push else ""
    messages.success(request, f"Removed {what}{where}.")


def _post(request, repo) -> str:
    """Do what the form asked; the URL to go back to."""
    action = request.POST.get("action", "")
    back = request.POST.get("return_prefix", "")
    back = back if isinstance(back, str) and len(back) <= 255 else ""
    try:
        if action == "remove":
            ref, old = request.POST.get("ref", ""), request.POST.get("old", "")
            removal = refs_admin.ref_remove(
                repo=repo, refs=[ref], actor=request.user, via="web", expected={ref: old} if old else None
            )
        elif action == "remove_namespace":
            prefix, confirm = request.POST.get("prefix", ""), request.POST.get("confirm", "")
            if not confirm.strip() or confirm.strip().rstrip("/") != prefix.strip().rstrip("/"):
                raise InvalidInput(f"Type {prefix.strip()[:80]} exactly to confirm; nothing was removed.")
            removal = refs_admin.namespace_remove(repo=repo, prefix=prefix, actor=request.user, via="web")
            back = ""
        elif action == "remove_name":
            ref = refs_admin.name_to_ref(request.POST.get("kind", ""), request.POST.get("name", ""))
            removal = refs_admin.ref_remove(repo=repo, refs=[ref], actor=request.user, via="web")
        else:
            raise InvalidInput("Unknown action.")
        _removed(request, removal)
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _here(repo, back)


@require_http_methods(["GET", "POST"])
def repository_refs(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    if request.method == "POST":
        return redirect(_post(request, repo))
    status, prefix = 200, request.GET.get("prefix", "")
    try:
        listing = refs_listing.refs_list(repo, prefix, page=_page(request.GET.get("page")), per_page=PER_PAGE)
    except ServiceError as exc:
        messages.error(request, exc.message)
        status, listing = 400, refs_listing.refs_list(repo, "", per_page=PER_PAGE)
    shown = listing.prefix
    if shown and any(entry.ref != shown for entry in listing.refs):
        shown += "/"
    return render(
        request,
        "repos/refs.html",
        {
            "repo": repo,
            "listing": listing,
            "shown_prefix": shown,
            "imported": refs_listing.IMPORTED_REFS,
            "default_ref": f"refs/heads/{repo.default_branch}",
            "prev_url": _here(repo, listing.prefix, listing.page - 1) if listing.page > 1 else "",
            "next_url": _here(repo, listing.prefix, listing.page + 1) if listing.page < listing.pages else "",
        },
        status=status,
    )


urlpatterns: list = [
    path("<str:owner>/<str:name>/settings/refs", repository_refs, name="repository-refs"),
]
