"""The signed-in user's notifications page and its mark-as-read forms."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from notifications import selectors, services

PER_PAGE = 50


@login_required
def notification_list(request):
    unread_only = request.GET.get("filter") == "unread"
    page = Paginator(selectors.notifications_for(request.user, unread_only=unread_only), PER_PAGE).get_page(
        request.GET.get("page")
    )
    page.object_list = selectors.as_shown(page.object_list, request.user)
    return render(request, "notifications/list.html", {"page": page, "unread_only": unread_only})


@login_required
@require_POST
def notification_read(request, pk: int):
    notification = services.notification_mark_read(user=request.user, notification_id=pk)
    if notification is None:
        raise Http404
    # A subject the user may no longer see has no link to follow.
    notification = selectors.as_shown([notification], request.user)[0]
    # "Open" marks it read and follows its link; only local links are followed.
    if (
        request.POST.get("follow")
        and notification.url
        and url_has_allowed_host_and_scheme(notification.url, allowed_hosts={request.get_host()})
    ):
        return redirect(notification.url)
    return redirect("notifications")


@login_required
@require_POST
def notification_read_all(request):
    services.notifications_mark_all_read(user=request.user)
    return redirect("notifications")
