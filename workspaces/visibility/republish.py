"""What may not be published again: the one rule for pushes and web writes.

A take-down blocks its commits: the commits only taken-down refs reach may not be pointed at
again, built on, merged or restored, by id, in any push or web action, by anyone but staff (the
owner included: a take-down is a legal hold). Content staff list as blocked (BlockedObject: a
tree or a blob, by id) may not be published in any history. Nothing else is blocked: hiding a
workspace blocks nobody, and other content that merely shares bytes with taken-down work (an
identical vendored file, an empty file) goes through. A rule by bytes would refuse unrelated
pushes, so the only rule by bytes is the explicit list.

Pushes are judged by the pre-receive hook, which gets the blocked prefixes and ids from
`hook_environment`; web writes by `blocks_republishing`. Both walk with the same function,
repos/hooks/contentguard.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitcore.git import run_git
from gitcore.gittools import is_zero
from repos.hooks import contentguard, refspace
from repos.hooks.updates import Update
from workspaces.models import BlockedObject
from workspaces.visibility.rule import blocked_prefixes, is_staff

# Ids travel to the hook in one environment variable (at most 128 KiB on Linux): the list is
# for legal requests naming files, not for filtering content at large.
MAX_BLOCKED = 1000


def blocked_ids(repo) -> list[str]:
    return sorted(BlockedObject.objects.filter(repository=repo).values_list("oid", flat=True))


def hook_environment(repo, user, commands) -> dict[str, str]:
    """What the pre-receive hook needs to refuse a push that publishes blocked content, from the
    database alone; nothing for staff, for pushes that only delete, or where nothing is blocked."""
    if is_staff(user) or not any(not is_zero(new) for _old, new, _ref in commands):
        return {}
    env = {}
    if prefixes := blocked_prefixes(repo, user):
        env["HOSTSITE_BLOCKED_PREFIXES"] = " ".join(prefixes)
    if ids := blocked_ids(repo):
        env["HOSTSITE_BLOCKED_OBJECTS"] = " ".join(ids)
    return env


def blocks_republishing(repo, user, tips: Iterable[str]) -> bool:
    """Whether history from `tips` (objects already in the repository) reaches blocked content:
    what a merge, restore, proposal or web edit by `user` may not publish."""
    prefixes = blocked_prefixes(repo, user)
    ids = [] if is_staff(user) else blocked_ids(repo)
    tips = sorted({tip for tip in tips if tip and not is_zero(tip)})
    if not tips or (not prefixes and not ids):
        return False
    path = repo.disk_path

    def git(args, input=None, before=False):
        ran = run_git(args, repo=path, input=(input or "").encode(), check=False, timeout=600)
        return ran.returncode, ran.text

    own = refspace.workspace_prefix(user.username) if user is not None and user.is_authenticated else None
    updates = [Update("0" * len(tip), tip, f"tip {n}") for n, tip in enumerate(tips)]
    return bool(contentguard.refused_refs(updates, prefixes=prefixes, objects=ids, own_prefix=own, git=git))
