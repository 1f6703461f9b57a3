"""The repository page's clone box: HTTP or SSH, chosen by a plain link (`?clone=ssh`), so the
choice works without JavaScript. repos knows no other app, so its page asks here."""

from __future__ import annotations

from dataclasses import dataclass

from django import template

from sshgit import selectors

register = template.Library()


@dataclass(frozen=True)
class CloneChoice:
    http: str
    ssh: str | None
    protocol: str  # "http" or "ssh"

    @property
    def url(self) -> str:
        return self.ssh if self.protocol == "ssh" and self.ssh else self.http

    @property
    def label(self) -> str:
        return "SSH" if self.protocol == "ssh" else "HTTP"


@register.simple_tag(takes_context=True)
def clone_choice(context, repo, http_url: str) -> CloneChoice:
    """SSH when asked for (`?clone=ssh`), or by default to a signed-in user who has a key."""
    request = context.get("request")
    ssh = selectors.ssh_clone_url(request, repo) if request is not None else None
    if ssh is None:
        return CloneChoice(http=http_url, ssh=None, protocol="http")
    asked = request.GET.get("clone")
    if asked in ("http", "ssh"):
        protocol = asked
    else:
        user = getattr(request, "user", None)
        has_key = bool(user is not None and user.is_authenticated and selectors.keys_of(user).exists())
        protocol = "ssh" if has_key else "http"
    return CloneChoice(http=http_url, ssh=ssh, protocol=protocol)
