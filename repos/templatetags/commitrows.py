"""A list of commits as rows, built in Python: the same markup templates/repos/_commit_list.html
had in its loop, with the same escaping (conditional_escape of every value) and the same
filters (date "c", timesince). The template loop cost 0.1 s for a compare's 250 commits."""

from __future__ import annotations

from django import template
from django.template.defaultfilters import date, timesince_filter
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString

register = template.Library()


@register.simple_tag
def commit_rows(commits, repo_url: str) -> SafeString:
    if not commits:
        return SafeString('<li class="muted">No commits.</li>')
    base = conditional_escape(repo_url)
    rows = []
    for c in commits:
        url = f"{base}/commit/{conditional_escape(c.sha)}"
        rows.append(
            f'<li><a class="sha" href="{url}"><code>{conditional_escape(c.short)}</code></a>\n'
            f'    <span class="subject"><a href="{url}">{conditional_escape(c.subject)}</a></span>\n'
            f'    <span class="muted">{conditional_escape(c.author)} &middot; <time datetime="'
            f'{conditional_escape(date(c.authored, "c"))}">{conditional_escape(timesince_filter(c.authored))} '
            "ago</time></span></li>"
        )
    return SafeString("\n  ".join(rows))
