from django import template

from notifications.selectors import subscription_state, unread_count

register = template.Library()


@register.simple_tag(takes_context=True)
def unread_notifications(context) -> int:
    request = context.get("request")
    return unread_count(getattr(request, "user", None)) if request is not None else 0


@register.inclusion_tag("notifications/_subscription_form.html", takes_context=True)
def subscription_button(context, kind: str, pk, follow: str = "Follow", unfollow: str = "Unfollow") -> dict:
    """The follow / mute form for a subject ("proposal", 12) on a page the viewer may see.
    Nothing for anonymous visitors."""
    request = context.get("request")
    user = getattr(request, "user", None)
    subject = f"{kind}:{pk}"
    state = subscription_state(user, subject)
    return {
        "show": bool(getattr(user, "is_authenticated", False)),
        "subject": subject,
        "following": state is True,
        "muted": state is False,
        "follow": follow,
        "unfollow": unfollow,
        "next": request.get_full_path() if request is not None else "",
        "csrf_token": context.get("csrf_token"),
    }
