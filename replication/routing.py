"""What a replica does with a request, decided from its method and URL alone (no query):
serve it, send a git push to the primary (307), forward it, or ask freshness.

The decisions are here, apart from the middleware that acts on them, so each is a plain
function of the request that a test can call.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from django.conf import settings
from django.urls import Resolver404, ResolverMatch, resolve

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# Never routed: the nodes' own protocol, files every node has, and what tells whether this
# very node is up (a health check answered by another node would lie). Prefixes end in "/";
# the rest are whole paths ("status" is no reserved name: a user's /status/<repo> is routed).
UNROUTED_PREFIXES = ("/_replication/", "/health/", "/healthz/")
UNROUTED_PATHS = frozenset({"/favicon.ico", "/health", "/healthz", "/status", "/status.json"})

# git's endpoints of a repository, `.git` optional, as repos.urls matches them.
_GIT_INFO_REFS = re.compile(r"^/[^/]+/[^/]+/info/refs$")
_GIT_RPC = re.compile(r"^/[^/]+/[^/]+/(git-upload-pack|git-receive-pack)$")


class Route(enum.Enum):
    LOCAL = "local"  # not a repository's content, or not to be routed at all
    PUSH = "push"  # git-receive-pack: the client is sent to the primary (307)
    FORWARD = "forward"  # a write: the primary answers, through this node
    REPOSITORY = "repository"  # a read of a repository: freshness decides


@dataclass(frozen=True)
class Decision:
    route: Route
    owner: str = ""
    name: str = ""


def is_unrouted(path: str) -> bool:
    static = "/" + settings.STATIC_URL.strip("/") + "/"
    return path in UNROUTED_PATHS or path.startswith((static, *UNROUTED_PREFIXES))


def is_git_request(request) -> bool:
    path = request.path_info
    return bool(_GIT_INFO_REFS.match(path) or _GIT_RPC.match(path))


def is_push(request) -> bool:
    """The two requests of a push over smart HTTP: the receive-pack advertisement and the
    receive-pack RPC itself (git only sends the latter to where the former redirected it)."""
    path = request.path_info
    if _GIT_INFO_REFS.match(path):
        return request.GET.get("service") == "git-receive-pack"
    match = _GIT_RPC.match(path)
    return bool(match and match.group(1) == "git-receive-pack")


# Pages whose content is on the primary's disk, not in the shared database: a workspace
# export is a file the primary's worker wrote under its VAR_DIR, and the SSH help page shows
# the host keys of the primary's sshd (replicas run none).
PRIMARY_ONLY_VIEWS = frozenset({"workspace-export-download", "help-ssh"})


def _resolve(path: str) -> ResolverMatch | None:
    try:
        return resolve(path)
    except Resolver404:
        return None


def repository_of(path: str) -> tuple[str, str] | None:
    """The `owner/name` the URL's view is about (web pages, API, git, bundles: every route of a
    repository names them `owner` and `name`), or None for every other page."""
    match = _resolve(path)
    return _named_repository(match) if match is not None else None


def _named_repository(match: ResolverMatch) -> tuple[str, str] | None:
    owner, name = match.kwargs.get("owner"), match.kwargs.get("name")
    if isinstance(owner, str) and isinstance(name, str) and owner and name:
        return owner, name
    return None


def decide(request) -> Decision:
    path = request.path_info
    if is_unrouted(path):
        return Decision(Route.LOCAL)
    if is_push(request):
        return Decision(Route.PUSH)
    if request.method not in SAFE_METHODS and not _GIT_RPC.match(path):
        return Decision(Route.FORWARD)
    match = _resolve(path)
    if match is None:
        return Decision(Route.LOCAL)
    if match.url_name in PRIMARY_ONLY_VIEWS:
        return Decision(Route.FORWARD)
    found = _named_repository(match)
    if found is None:
        # A POST of git-upload-pack outside any repository's route: let the view say 404.
        return Decision(Route.LOCAL)
    return Decision(Route.REPOSITORY, *found)
