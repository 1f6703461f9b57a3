"""Home, the repository page and its settings (the new-repository page is sources')."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from repos import browse, lifecycle, objectcheck_services, refnav, selectors, services, webhooks
from repos.errors import ServiceError
from repos.forms import MemberForm, RepositorySettingsForm, WebhookForm
from repos.models import Role, Visibility, Webhook
from repos.views import admin_repo_or_404, form_error, repo_or_404
from repos.views.browse import cached_tree_context, url_for

SIDEBAR_REFS = 10  # branches and tags each in the repository page's sidebar


def home(request):
    public = selectors.visible_repositories(None).order_by("-updated_at")[:30]
    mine = []
    if request.user.is_authenticated:
        mine = selectors.visible_repositories(request.user).filter(owner=request.user).order_by("name")
    return render(request, "home.html", {"public_repos": public, "my_repos": mine})


def repository(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    canonical = reverse("repository", kwargs={"owner": repo.owner.username, "name": repo.name})
    if request.path != canonical:
        # One canonical URL per repository, whatever case, suffix or trailing slash was typed.
        return redirect(canonical)
    path = repo.disk_path
    # Both lists cached until a branch or tag moves (refnav): no process on a warm page.
    branches, tags = refnav.branches(path, repo.default_branch), refnav.tags(path)
    commits = browse.recent_commits(path, repo.default_branch) if branches else []
    # The default branch's files and README, as on the tree page.
    code = {}
    revision = browse.split_revision(path, repo.default_branch) if commits else None
    if revision is not None:
        code = {**cached_tree_context(repo, revision, browse.entry_at(path, revision.sha, ""))}
        code["tree_url"] = url_for(repo, "tree", revision.name)
        code["archive_url"] = url_for(repo, "archive", revision.name)
        code["revision"] = revision
    clone_url = request.build_absolute_uri(f"/{repo.owner.username}/{repo.name}.git")
    # Served by the bundles app; an empty list is valid, so the command always works.
    bundle_list_url = f"{clone_url}/bundle-list"
    is_admin = selectors.can_admin(request.user, repo)
    return render(
        request,
        "repos/repository.html",
        {
            "repo": repo,
            # The first few of each, linked to their trees; the rest on their own pages.
            "branches": branches[:SIDEBAR_REFS],
            "tags": tags[:SIDEBAR_REFS],
            "branches_more": max(0, len(branches) - SIDEBAR_REFS),
            "tags_more": max(0, len(tags) - SIDEBAR_REFS),
            "branches_url": reverse("repo-branches", args=[repo.owner.username, repo.name]),
            "tags_url": reverse("repo-tags", args=[repo.owner.username, repo.name]),
            "tree_base": f"{canonical}/tree/",
            "commits": commits,
            "clone_url": clone_url,
            "bundle_list_url": bundle_list_url,
            "is_admin": is_admin,
            "role": selectors.role_for(request.user, repo),
            "purge_after": lifecycle.purge_after(repo) if repo.deleted_at else None,
            # The import's status panel is sources' template; the mirror's, its template tag.
            "active_import": selectors.active_import(repo),
            "legacy": objectcheck_services.legacy_summary(repo) if is_admin else None,
            **code,
        },
    )


@login_required
def repository_settings(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    form = RepositorySettingsForm(
        request.POST or None,
        initial={
            "description": repo.description,
            "visibility": repo.visibility,
            "default_branch": repo.default_branch,
        },
    )
    if request.method == "POST" and form.is_valid():
        try:
            services.repository_update(repo=repo, actor=request.user, **form.cleaned_data)
        except ServiceError as exc:
            form_error(form, exc)
        else:
            messages.success(request, "Settings saved.")
            return redirect("repository-settings", owner=repo.owner.username, name=repo.name)
    return render(
        request,
        "repos/settings.html",
        {
            "repo": repo,
            "form": form,
            "member_form": MemberForm(),
            "members": selectors.members(repo),
            "Visibility": Visibility,
            "webhook_form": WebhookForm(),
            "webhooks": Webhook.objects.filter(repository=repo).prefetch_related("deliveries"),
            "new_webhook_secret": request.session.pop("new_webhook_secret", None),
            "retention_days": settings.REPOSITORY_DELETE_RETENTION_DAYS,
        },
    )


@login_required
@require_POST
def repository_member_set(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    form = MemberForm(request.POST)
    if form.is_valid():
        user = selectors.user_by_name(form.cleaned_data["username"])
        if user is None:
            messages.error(request, f"No user named '{form.cleaned_data['username']}'.")
        else:
            try:
                services.membership_set(
                    repo=repo, user=user, role=Role.from_label(form.cleaned_data["role"]), actor=request.user
                )
            except ServiceError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, f"{user.username} is now {form.cleaned_data['role']}.")
    else:
        messages.error(request, "Give a username and a role.")
    return redirect("repository-settings", owner=repo.owner.username, name=repo.name)


@login_required
@require_POST
def repository_member_remove(request, owner: str, name: str, username: str):
    repo = admin_repo_or_404(request, owner, name)
    user = selectors.user_by_name(username)
    if user is not None and services.membership_remove(repo=repo, user=user, actor=request.user):
        messages.success(request, f"Removed {user.username}.")
    return redirect("repository-settings", owner=repo.owner.username, name=repo.name)


@login_required
@require_POST
def repository_webhook_add(request, owner: str, name: str):
    repo = admin_repo_or_404(request, owner, name)
    form = WebhookForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give a valid http(s) URL.")
    else:
        try:
            hook = webhooks.webhook_create(repo=repo, created_by=request.user, **form.cleaned_data)
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            # Shown once, on the next page, like a token.
            request.session["new_webhook_secret"] = hook.secret
            messages.success(request, f"Webhook added: {hook.url}")
    return redirect("repository-settings", owner=repo.owner.username, name=repo.name)


@login_required
@require_POST
def repository_webhook_delete(request, owner: str, name: str, hook_id: int):
    repo = admin_repo_or_404(request, owner, name)
    deleted, _ = Webhook.objects.filter(repository=repo, pk=hook_id).delete()
    if deleted:
        messages.success(request, "Webhook deleted.")
    return redirect("repository-settings", owner=repo.owner.username, name=repo.name)
