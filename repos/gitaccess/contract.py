"""The git access contract: what another app may add to a git request, through one typed
interface named in settings (GIT_ACCESS_BACKENDS, the way Django names
AUTHENTICATION_BACKENDS).

repos decides who is asking and whether they may read or push at all (repos.gitaccess.authorize);
backends shape the rest: extra hooks, the hooks' environment, per-request `git -c`
configuration (ref hiding, bundle lists), and which objects a viewer may not reach. The push
policy is not a backend's to choose: one module judges every push (repos.gitaccess.policy).
repos never imports the apps that implement it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from gitcore.hooksocket import Handler

# (old, new, ref) as a push sends it
Command = tuple[str, str, str]


@dataclass(frozen=True)
class GitClient:
    """What a backend may know of the client behind one smart HTTP request."""

    accept_encoding: str = ""  # its Accept-Encoding (git's curl lists what it can decode)
    remote_addr: str = ""
    base_url: str = ""  # the site's absolute URL as the client reached it, "http://host/"
    protocol: str | None = None  # the Git-Protocol header, "version=2" for v2


@dataclass(frozen=True)
class GitRequest:
    """One git operation on one repository, as the backends see it."""

    repository: Any  # repos.models.Repository
    user: Any | None  # None: anonymous
    role: str  # the role label the hooks see ("reader", "maintainer", "admin"; "" for none)
    service: str  # "upload-pack" or "receive-pack"
    # The git client of a smart HTTP request. None: a web write (a merge, the web editor, a ref
    # removal), which writes refs as named, through none of the hooks.
    client: GitClient | None = None
    commands: tuple[Command, ...] = ()  # a push's ref updates
    capabilities: frozenset[str] = frozenset()  # a push's, from its first command ("atomic", ...)


@runtime_checkable
class GitAccess(Protocol):
    def hook_handlers(self) -> dict[str, Handler]:
        """hook name (e.g. "proc-receive") -> what answers it for a push, in the process serving
        the push (gitcore.hooksocket)."""

    def hook_env(self, req: GitRequest) -> dict[str, str]:
        """Environment for the hooks of a push, over the repository's rules (push_env)."""

    def git_config(
        self, req: GitRequest, *, advertise: bool, refs: list[str] | None
    ) -> list[tuple[str, str]]:
        """`git -c key=value` pairs for this request (the advertisement when `advertise`)."""

    def push_aliases(self, req: GitRequest) -> list[tuple[str, str]]:
        """(shown prefix, real prefix) pairs: a push advertisement written by the app
        (gitcore.advertisement) shows each ref under the real prefix also under the shown one,
        e.g. ("refs/heads/", "refs/users/alice/"), in place of a ref of that name."""

    def hidden_objects(self, req: GitRequest, oids: frozenset[str]) -> set[str]:
        """Which of these object ids (whole, lower case: gitcore.oids) this viewer may not see.
        A fetch answers for them as for ids that do not exist (repos.fetchscreen)."""


class BaseGitAccess:
    """No-op defaults: a backend overrides only what it adds."""

    def hook_handlers(self) -> dict[str, Handler]:
        return {}

    def hook_env(self, req: GitRequest) -> dict[str, str]:
        return {}

    def git_config(
        self, req: GitRequest, *, advertise: bool, refs: list[str] | None
    ) -> list[tuple[str, str]]:
        return []

    def push_aliases(self, req: GitRequest) -> list[tuple[str, str]]:
        return []

    def hidden_objects(self, req: GitRequest, oids: frozenset[str]) -> set[str]:
        return set()
