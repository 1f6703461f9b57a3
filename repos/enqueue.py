"""The one way any code of the site asks for a Celery task: by the task's name, once the
current transaction commits (`after_commit`), or at once (`send`) where there is no
transaction to wait for (a task fanning out, a commit callback).

Naming the task instead of importing its module keeps every app's `tasks.py` the top of that
app: the services a task calls can ask for the next task without importing it back. The
registered task object is used (so its options, `publishes_held` and test doubles apply);
a task whose module this process has not imported yet is found by loading every app's tasks
once, as a worker does at start; a name still unknown goes to the broker as it is, which is
all a worker needs. `queue` routes a job to one node's worker (hostsite.queues).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from hostsite.celery import app


def send(
    task_name: str,
    *args: Any,
    countdown: float | None = None,
    queue: str | None = None,
    kwargs: dict[str, Any] | None = None,
) -> None:
    """Send now: for callers outside a transaction, or already on its commit."""
    options: dict[str, Any] = {}
    if countdown is not None:
        options["countdown"] = countdown
    if queue is not None:
        options["queue"] = queue
    task = app.tasks.get(task_name)
    if task is None:
        app.loader.import_default_modules()
        task = app.tasks.get(task_name)
    if task is None:
        app.send_task(task_name, args=args, kwargs=kwargs, **options)
    elif kwargs:
        task.apply_async(args, kwargs, **options)
    else:
        task.apply_async(args, **options)


def after_commit(task_name: str, *args: Any, **options: Any) -> None:
    """Send when the current transaction commits (at once outside one); never for a rollback.
    The options are send's (countdown, queue, kwargs)."""
    transaction.on_commit(lambda: send(task_name, *args, **options))
