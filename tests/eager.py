"""Celery tasks in a test with no worker: the ones that follow an event (a push, an archived
ref, a visibility change) run at once in the test's process and transaction, through Celery's
own eager `apply` (errors raise); every other task is recorded as (name, args), not sent, so a
rolled-back test leaves no message for the session's worker."""

from __future__ import annotations

from celery.app.task import Task

# What receivers of push_recorded, workspace_ref_archived, visibility_changed and
# mirror_status_changed enqueue.
FOLLOWERS = frozenset(
    {
        "bundles.tasks.follow_push",
        "bundles.tasks.follow_visibility_change",
        "notifications.tasks.notify_mirror_status",
        "reviews.tasks.follow_push",
        "reviews.tasks.follow_archive",
        "showwork.tasks.forget_graphs",
        "workspaces.tasks.follow_push",
        "workspaces.tasks.notify_archived_ref",
    }
)


def run_followers(monkeypatch, names: frozenset[str] = FOLLOWERS) -> list[tuple[str, tuple]]:
    """Run the tasks `names` eagerly from now on; returns the list the others are recorded in."""
    recorded: list[tuple[str, tuple]] = []

    def apply_async(self, args=None, kwargs=None, **_options):
        if self.name in names:
            return self.apply(args, kwargs, throw=True)
        recorded.append((self.name, tuple(args or ())))
        return None

    monkeypatch.setattr(Task, "apply_async", apply_async)
    return recorded
