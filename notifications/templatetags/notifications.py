from django import template

from notifications.selectors import unread_count

register = template.Library()


@register.simple_tag(takes_context=True)
def unread_notifications(context) -> int:
    request = context.get("request")
    return unread_count(getattr(request, "user", None)) if request is not None else 0
