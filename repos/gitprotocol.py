"""Who and what a smart HTTP request is about, before any git runs: the services served, the
error that carries the HTTP status to answer, the pusher, the Git-Protocol header, and the
repository's directory."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from repos.models import Repository, Role

log = logging.getLogger(__name__)

SERVICES = {"git-upload-pack": "upload-pack", "git-receive-pack": "receive-pack"}
# Git-Protocol is `version=2` plus optional `:`-separated key=value pairs; nothing else gets
# through to git's environment.
_PROTOCOL_RE = re.compile(r"^[A-Za-z0-9._-]+(=[A-Za-z0-9._-]*)?(:[A-Za-z0-9._-]+(=[A-Za-z0-9._-]*)?)*$")


class GitHTTPError(Exception):
    def __init__(self, status: int, message: str, *, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        # Seconds for a Retry-After header (a rate limit's 429).
        self.retry_after = retry_after


@dataclass(frozen=True)
class Pusher:
    """Who is talking to git, decided by the view before git starts."""

    user: Any  # repos.models.User, None for anonymous
    role: Role | None
    can_read: bool = True

    @property
    def role_label(self) -> str:
        """The role the hooks see: signed-in users who may read a public repository without
        being members are readers."""
        if self.role is not None:
            return self.role.label
        return Role.READER.label if self.user is not None and self.can_read else ""


def parse_git_protocol(value: str | None) -> str | None:
    if not value:
        return None
    if len(value) > 256 or not _PROTOCOL_RE.match(value):
        raise GitHTTPError(400, "invalid Git-Protocol header")
    return value


def wants_v2(protocol: str | None) -> bool:
    return protocol is not None and "version=2" in protocol.split(":")


def repository_dir(repo: Repository) -> Path:
    """The repository's directory, refusing anything that resolves outside REPO_ROOT (a
    symlink planted inside it, say)."""
    path = repo.disk_path
    root = Path(settings.REPO_ROOT).resolve()
    resolved = path.resolve()
    if resolved.parent.parent != root or not (resolved / "HEAD").is_file():
        log.error("refusing to serve %s: %s resolves to %s", repo.full_name, path, resolved)
        raise GitHTTPError(404, "Repository not found")
    return resolved
