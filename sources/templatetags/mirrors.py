"""The mirror a repository tracks, for repos' repository page: its template loads this library
and includes sources/_mirror_status.html, so repos' view needs no Python import of sources."""

from __future__ import annotations

from django import template

from sources import selectors

register = template.Library()


@register.simple_tag
def mirror_of(repo):
    return selectors.mirror_of(repo)
