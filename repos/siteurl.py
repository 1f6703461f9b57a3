"""Absolute links for clients that cannot follow relative ones (git's `remote:` lines): the
configured SITE_URL, else the base URL the request reached."""

from __future__ import annotations

from urllib.parse import quote

from django.conf import settings

from repos.gitaccess import GitClient


def site_base(client: GitClient | None) -> str:
    """The base, "https://host/" (one trailing slash), or "" when neither is known."""
    base = settings.SITE_URL or (client.base_url if client is not None else "")
    return base.rstrip("/") + "/" if base else ""


def repository_url(repo, client: GitClient | None) -> str:
    """The repository page's absolute URL, without a trailing slash; "" when the base is unknown."""
    base = site_base(client)
    if not base:
        return ""
    return f"{base}{quote(repo.owner.username, safe='')}/{quote(repo.name, safe='')}"
