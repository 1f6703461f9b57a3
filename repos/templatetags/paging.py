"""`{% page_url 3 %}`: this page's URL with ?page=3 and every other query parameter kept
(filters such as ?state= survive paging)."""

from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def page_url(context, number: int) -> str:
    query = context["request"].GET.copy()
    query["page"] = str(number)
    return "?" + query.urlencode()
