"""Follow and mute forms (the button notifications.templatetags renders on proposal and
repository pages), and the signed unsubscribe link of every notification mail."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from notifications import email, services, subjects


@login_required
@require_POST
def subscription_update(request):
    """POST subject=<proposal:12|repository:3>, action=follow|mute, next=<local page>. A subject
    the user may not see is a 404, as its page is."""
    action = request.POST.get("action")
    info = subjects.resolve(request.POST.get("subject"), request.user)
    if info is None or action not in ("follow", "mute"):
        raise Http404
    services.subscription_set(user=request.user, subject=info.subject, subscribed=action == "follow")
    target = request.POST.get("next") or info.url
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = info.url
    return redirect(target)


# RFC 8058: mail clients POST "List-Unsubscribe=One-Click" to the link with no cookies and no
# CSRF token; the signed token is the authorisation. A GET (a person clicking the link) only
# shows a confirmation form, so a link scanner opening it changes nothing.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request, token: str):
    payload = email.read_token(token)
    if payload is None:
        return render(request, "notifications/unsubscribe.html", {"invalid": True}, status=400)
    if request.method == "GET":
        return render(request, "notifications/unsubscribe.html", {"token": token})
    done = services.unsubscribe(payload=payload)
    if done is None:
        return render(request, "notifications/unsubscribe.html", {"invalid": True}, status=400)
    return render(request, "notifications/unsubscribe.html", {"done": done})
