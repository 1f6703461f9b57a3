"""Moderation pages: report a workspace (anyone signed in), the staff page (/moderation: the
reports queue, actions, the audit log) and a repository's moderation settings page (its
admins: the same, limited to that repository and to what admins may do)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render

from repos import selectors as repo_selectors
from repos.audit import Action
from repos.errors import InvalidInput, NotFound, ServiceError
from repos.views import repo_or_404
from workspaces import moderation, moderation_content, selectors
from workspaces import moderation_selectors as msel
from workspaces.models import ModerationAction, Report, Workspace

PER_PAGE = 50

ACTIONS = {
    ModerationAction.FREEZE: moderation.do_freeze_workspace,
    ModerationAction.UNFREEZE: moderation.do_unfreeze_workspace,
    ModerationAction.HIDE: moderation.do_hide_workspace,
    ModerationAction.UNHIDE: moderation.do_unhide_workspace,
    ModerationAction.TAKE_DOWN: moderation.do_take_down_workspace,
    ModerationAction.LIFT_TAKE_DOWN: moderation.do_lift_take_down,
    ModerationAction.PURGE: moderation.do_purge_workspace,
    # Clears every flag: the action the pages and the API had before the flags were separate.
    ModerationAction.RESTORE: moderation.do_restore_workspace,
    ModerationAction.BAN: moderation.do_ban_from_repository,
    ModerationAction.UNBAN: moderation.do_unban_from_repository,
}
SITE_ACTIONS = {
    ModerationAction.SITE_BAN: moderation.do_ban_from_site,
    ModerationAction.SITE_UNBAN: moderation.do_unban_from_site,
}
ADMIN_ACTIONS = [a for a in ACTIONS if a not in moderation.STAFF_ONLY]


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=moderation.REASON_MAX)


def run_action(*, action: str, acting_user, username: str, reason: str, repo=None, report_id=None):
    """Apply one action by name (the pages and the API share this); raises ServiceError."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No user {username!r}.")
    if action in SITE_ACTIONS:
        entry = SITE_ACTIONS[action](user=user, acting_user=acting_user, reason=reason)  # type: ignore[index]  # a StrEnum key
    elif action in ACTIONS:
        if repo is None:
            raise InvalidInput("Name the repository.", fields={"repository": ["This field is required."]})
        entry = ACTIONS[action](repo=repo, user=user, acting_user=acting_user, reason=reason)  # type: ignore[index]  # a StrEnum key
    else:
        raise InvalidInput(f"Unknown action {action!r}.", fields={"action": ["Unknown action."]})
    if report_id:
        report = Report.objects.filter(pk=report_id, state=Report.State.OPEN).first()
        if report is not None:
            moderation.report_close(report=report, acting_user=acting_user, resolved=True)
    return entry


@login_required
def report_workspace(request, owner: str, name: str, username: str):
    repo = repo_or_404(request, owner, name)
    if not selectors.visible_to(request.user, repo, username):
        raise Http404
    target = get_user_model().objects.filter(username=username).first()
    if target is None:
        raise Http404
    form = ReasonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            moderation.report_create(
                repo=repo, target_user=target, reporter=request.user, reason=form.cleaned_data["reason"]
            )
            messages.success(request, "Thank you: the report went to the moderators.")
            return redirect("workspace-user", owner=repo.owner.username, name=repo.name, username=username)
        except ServiceError as exc:
            form.add_error(None, exc.message)
    return render(
        request,
        "workspaces/report.html",
        {"repo": repo, "username": username, "form": form, "tab": "workspaces"},
    )


def _audit_page(request, repo=None):
    filters = {k: request.GET.get(k, "").strip()[:200] for k in ("repository", "user", "action")}
    if repo is not None:
        filters["repository"] = ""
    page = Paginator(msel.audit_log(repo=repo, **filters), PER_PAGE).get_page(request.GET.get("page"))
    # Each entry as this viewer may read it: an admin never sees moderated refs or ids.
    page.object_list = msel.audit_rows(page.object_list, request.user)
    return page, filters


def _content(request, repo, redirect_to):
    """POST handler for the repository page's blocked content (staff only: the service says so)."""
    service = moderation_content.do_block_content if request.POST.get("content") == "block" else None
    service = service or moderation_content.do_unblock_content
    try:
        service(
            repo=repo,
            oid=request.POST.get("oid", ""),
            acting_user=request.user,
            reason=request.POST.get("reason", ""),
        )
        messages.success(request, "Done; the change is in the audit log.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect_to


def _act(request, repo, redirect_to):
    """POST handler shared by both pages: an action on a workspace, or closing a report."""
    if request.POST.get("dismiss"):
        report = Report.objects.filter(pk=request.POST.get("dismiss")).select_related("repository").first()
        if report is None or (repo is not None and report.repository_id != repo.pk):
            raise Http404
        try:
            moderation.report_close(
                report=report, acting_user=request.user, resolved=False, reason=request.POST.get("reason", "")
            )
            messages.success(request, "Report dismissed.")
        except ServiceError as exc:
            messages.error(request, exc.message)
        return redirect_to
    target_repo = repo
    if repo is None and request.POST.get("repository"):
        owner, _, name = request.POST["repository"].strip().partition("/")
        target_repo = repo_selectors.readable_repository(request.user, owner, name)
        if target_repo is None:
            messages.error(request, "No such repository.")
            return redirect_to
    try:
        run_action(
            action=request.POST.get("action", ""),
            acting_user=request.user,
            username=request.POST.get("username", "").strip(),
            reason=request.POST.get("reason", ""),
            repo=target_repo,
            report_id=request.POST.get("report") or None,
        )
        messages.success(request, "Done; the action is in the audit log.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect_to


@login_required
def staff_page(request):
    if not moderation.is_staff(request.user):
        raise Http404
    if request.method == "POST":
        return _act(request, None, redirect("moderation"))
    page, filters = _audit_page(request)
    return render(
        request,
        "workspaces/moderation.html",
        {
            "reports": msel.with_flags(msel.reports_queue()[:100]),
            "page": page,
            "filters": filters,
            "repo": None,
            "actions": [*ACTIONS, *SITE_ACTIONS],
            "all_actions": [*ModerationAction.values, *Action.values],
        },
    )


@login_required
def repository_page(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    if not moderation.may_moderate(request.user, repo):
        raise Http404
    if request.method == "POST":
        here = redirect("repository-moderation", owner=repo.owner.username, name=repo.name)
        if request.POST.get("content") in ("block", "unblock"):
            return _content(request, repo, here)
        return _act(request, repo, here)
    page, filters = _audit_page(request, repo)
    workspaces = Workspace.objects.filter(selectors.MODERATED, repository=repo).select_related("user")
    return render(
        request,
        "workspaces/moderation.html",
        {
            "reports": msel.with_flags(msel.reports_queue(repo=repo)[:100]),
            "page": page,
            "filters": filters,
            "repo": repo,
            "actions": list(ACTIONS) if moderation.is_staff(request.user) else ADMIN_ACTIONS,
            "all_actions": [*ModerationAction.values, *Action.values],
            "moderated": workspaces,
            "bans": repo.bans.select_related("user"),
            # The ids of blocked content are staff's, as the take-down's refs are.
            "blocked": repo.blocked_objects.select_related("created_by")
            if moderation.is_staff(request.user)
            else None,
        },
    )
