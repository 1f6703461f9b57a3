"""Proposals follow pushes and archived refs: each event only enqueues a task
(reviews.tasks), once its transaction commits; the git and database work runs in a worker."""

from __future__ import annotations

from django.db import transaction
from django.dispatch import receiver

from repos.signals import push_recorded
from reviews import tasks
from workspaces.signals import workspace_ref_archived


def hook_environment(repo, user, role, commands=()) -> dict[str, str]:
    """What post-receive prints to a push that carried options (git shows it as `remote:`)."""
    if not any(ref.startswith("refs/for/") for _old, _new, ref in commands):
        return {}
    return {
        "HOSTSITE_PUSH_OPTIONS_NOTICE": f"proposals opened with -o title=... are listed at /{repo.owner.username}/{repo.name}/proposals"
    }


@receiver(push_recorded)
def follow_push(sender, push_id: int, **_kwargs) -> None:
    transaction.on_commit(lambda: tasks.follow_push.delay(push_id))


@receiver(workspace_ref_archived)
def follow_archive(
    sender, repository_id: int, ref: str, sha: str, push_id: int | None = None, **_kwargs
) -> None:
    transaction.on_commit(lambda: tasks.follow_archive.delay(repository_id, ref, sha, push_id))
