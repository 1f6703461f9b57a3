"""Enqueue a Celery task by its name once the current transaction commits.

A service that asks for background work is often the code that work calls back (an import
request queues the import run, which reads the request's constants): naming the task instead
of importing its module keeps tasks the top layer of each app, with no import cycle. The
registered task is used when the process has it (so its options and test doubles apply);
otherwise the message goes to the broker by name, which is all a worker needs.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from hostsite.celery import app


def send(task_name: str, *args: Any, countdown: float | None = None) -> None:
    """Send now: for callers outside a transaction, or already on its commit."""
    task = app.tasks.get(task_name)
    if task is None:
        app.send_task(task_name, args=args, countdown=countdown)
    elif countdown is None:
        task.delay(*args)
    else:
        task.apply_async(args, countdown=countdown)


def after_commit(task_name: str, *args: Any, countdown: float | None = None) -> None:
    """Send when the current transaction commits (at once outside one); never for a rollback."""
    transaction.on_commit(lambda: send(task_name, *args, countdown=countdown))
