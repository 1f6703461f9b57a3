"""Extension points through which other apps shape pushes, without repos importing them.

workspaces registers its ref policy (installed as the hooks' policy.py), the rules the hook
applies, and per-request git configuration (ref hiding, proc-receive) in its AppConfig.ready();
bundles registers per-request configuration too (the protocol v2 bundle list).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_POLICY = Path(__file__).resolve().parent / "hooks" / "policy.py"

_policy_source: Path = DEFAULT_POLICY
# hook name -> standalone script source (e.g. proc-receive from workspaces)
_extra_hooks: dict[str, Path] = {}
# (repo, user, role_label, commands [(old, new, ref)]) -> environment for the hooks
_hook_env_providers: list[Callable] = []
# (repo, user, role_label, service, advertise: bool, refs: list[str] | None[, client]) -> git -c pairs
_git_config_providers: list[Callable] = []
# providers whose signature takes `client` (or **kwargs); the others are called without it
_client_aware: set[Callable] = set()
# (repo, user, role_label, read_wants: () -> list[str]) -> why a fetch is refused, or None
_want_guards: list[Callable] = []


@dataclass(frozen=True)
class GitClient:
    """What a git config provider may know of the client behind one smart HTTP request."""

    accept_encoding: str = ""  # its Accept-Encoding (git's curl lists what it can decode)
    remote_addr: str = ""
    base_url: str = ""  # the site's absolute URL as the client reached it, "http://host/"
    protocol: str | None = None  # the Git-Protocol header, "version=2" for v2


def set_push_policy(source: Path) -> None:
    global _policy_source
    _policy_source = Path(source)


def push_policy_source() -> Path:
    return _policy_source


def register_hook(name: str, source: Path) -> None:
    _extra_hooks[name] = Path(source)


def extra_hooks() -> dict[str, Path]:
    return dict(_extra_hooks)


def register_hook_environment(provider: Callable) -> None:
    if provider not in _hook_env_providers:
        _hook_env_providers.append(provider)


def register_git_config(provider: Callable) -> None:
    if provider not in _git_config_providers:
        _git_config_providers.append(provider)
        parameters = inspect.signature(provider).parameters.values()
        if any(p.name == "client" or p.kind is p.VAR_KEYWORD for p in parameters):
            _client_aware.add(provider)


def register_want_guard(provider: Callable) -> None:
    if provider not in _want_guards:
        _want_guards.append(provider)


def refused_wants(repo, user, role: str, read_wants: Callable) -> str | None:
    """Protocol v2 upload-pack serves any object asked for by id, hidden refs or not (git 2.39
    checks wants against the advertisement in v0 only): providers refuse what must stay out
    of reach. read_wants parses the request only if a provider needs it."""
    for provider in _want_guards:
        refusal = provider(repo, user, role, read_wants)
        if refusal:
            return refusal
    return None


def hook_environment(repo, user, role: str, commands=()) -> dict[str, str]:
    env: dict[str, str] = {}
    for provider in _hook_env_providers:
        env.update(provider(repo, user, role, commands))
    return env


def git_config(
    repo,
    user,
    role: str,
    *,
    service: str,
    advertise: bool,
    refs: list[str] | None,
    client: GitClient | None = None,
) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for provider in _git_config_providers:
        extra = {"client": client} if provider in _client_aware else {}
        pairs.extend(provider(repo, user, role, service=service, advertise=advertise, refs=refs, **extra))
    return pairs
