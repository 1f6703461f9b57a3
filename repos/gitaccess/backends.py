"""The backends named in settings.GIT_ACCESS_BACKENDS, and their answers combined.

Combination, in the settings' order: the policy is the last backend's that names one (else
repos' default, repos/hooks/policy.py); hooks and environments are merged (later backends win
a clash); configuration pairs and push aliases are concatenated; the first refusal of a fetch wins.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.utils.module_loading import import_string

from repos.gitaccess.contract import GitAccess, GitRequest

DEFAULT_POLICY = Path(__file__).resolve().parent.parent / "hooks" / "policy.py"


def backends() -> list[GitAccess]:
    # Keyed by the setting's value, so override_settings in a test loads its own list.
    return _load(tuple(getattr(settings, "GIT_ACCESS_BACKENDS", ())))


@functools.cache
def _load(paths: tuple[str, ...]) -> list[GitAccess]:
    return [import_string(path)() for path in paths]


def policy_source() -> Path:
    source = DEFAULT_POLICY
    for backend in backends():
        found = backend.policy_source()
        if found is not None:
            source = Path(found)
    return source


def extra_hooks() -> dict[str, Path]:
    hooks: dict[str, Path] = {}
    for backend in backends():
        hooks.update(backend.extra_hooks())
    return hooks


def hook_env(req: GitRequest) -> dict[str, str]:
    env: dict[str, str] = {}
    for backend in backends():
        env.update(backend.hook_env(req))
    return env


def git_config(req: GitRequest, *, advertise: bool, refs: list[str] | None) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for backend in backends():
        pairs.extend(backend.git_config(req, advertise=advertise, refs=refs))
    return pairs


def push_aliases(req: GitRequest) -> list[tuple[str, str]]:
    aliases: list[tuple[str, str]] = []
    for backend in backends():
        aliases.extend(backend.push_aliases(req))
    return aliases


def commit_hidden(req: GitRequest, sha: str) -> bool:
    return any(backend.commit_hidden(req, sha) for backend in backends())


def refused_wants(req: GitRequest, wants: Callable[[], list[str]]) -> str | None:
    """Protocol v2 upload-pack serves any object asked for by id, hidden refs or not (git 2.39
    checks wants against the advertisement in v0 only): backends refuse what must stay out of
    reach. The request is parsed once, and only if a backend asks."""
    read = functools.cache(wants)
    for backend in backends():
        refusal = backend.refused_wants(req, read)
        if refusal:
            return refusal
    return None
