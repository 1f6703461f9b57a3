"""/settings/notifications: how each kind of notification reaches the signed-in user."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from notifications import email, selectors, services
from notifications.kinds import KINDS
from notifications.models import Delivery
from repos.errors import InvalidInput


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request):
    error = ""
    if request.method == "POST":
        # Kinds missing from the form keep their setting; an unknown value refuses the whole form.
        choices = {k.name: request.POST[k.name] for k in KINDS if k.name in request.POST}
        try:
            services.preferences_set(user=request.user, choices=choices)
        except InvalidInput as exc:
            error = exc.message
        else:
            messages.success(request, "Notification settings saved.")
            return redirect("notification-settings")
    current = selectors.deliveries_for(request.user)
    rows = [(kind, current[kind.name]) for kind in KINDS]
    return render(
        request,
        "notifications/settings.html",
        {
            "rows": rows,
            "deliveries": Delivery.choices,
            "error": error,
            "address": email.address_of(request.user),
            "email_enabled": settings.EMAIL_ENABLED,
        },
        status=400 if error else 200,
    )
