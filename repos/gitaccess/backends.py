"""The backends named in settings.GIT_ACCESS_BACKENDS, and their answers combined.

Combination, in the settings' order: hooks and environments are merged (later backends win
a clash); configuration pairs and push aliases are concatenated; hidden objects are the union
of every backend's.
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.utils.module_loading import import_string

from gitcore.hooksocket import Handler
from repos.gitaccess.contract import GitAccess, GitRequest


def backends() -> list[GitAccess]:
    # Keyed by the setting's value, so override_settings in a test loads its own list.
    return _load(tuple(getattr(settings, "GIT_ACCESS_BACKENDS", ())))


@functools.cache
def _load(paths: tuple[str, ...]) -> list[GitAccess]:
    return [import_string(path)() for path in paths]


def hook_handlers() -> dict[str, Handler]:
    hooks: dict[str, Handler] = {}
    for backend in backends():
        hooks.update(backend.hook_handlers())
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


def hidden_objects(req: GitRequest, oids: frozenset[str]) -> set[str]:
    """The ids any backend hides from this viewer. Protocol v2 upload-pack serves any object
    asked for by id, hidden refs or not (git checks wants against the advertisement in v0
    only), and answers haves and object-info for any object it holds."""
    hidden: set[str] = set()
    for backend in backends():
        hidden |= backend.hidden_objects(req, oids)
    return hidden
