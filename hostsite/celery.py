"""The Celery app. Configuration comes from Django settings (CELERY_* names)."""

import contextlib
import contextvars
import os
from collections.abc import Iterator
from pathlib import Path

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun, worker_init

from hostsite.fsbroker import recover_orphans

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hostsite.settings")

_held: contextvars.ContextVar[list | None] = contextvars.ContextVar("held_publishes", default=None)


class HostsiteTask(Task):
    """Every task of the site: its messages can be held back (publishes_held) and sent once the
    code that asked for them has let its client go."""

    def apply_async(self, args=None, kwargs=None, *more, **options):
        held = _held.get()
        if held is not None and not more:
            held.append((self, args, kwargs, options))
            return None
        return super().apply_async(args, kwargs, *more, **options)


@contextlib.contextmanager
def publishes_held() -> Iterator[list]:
    """Within: task messages are collected instead of sent; send them with send_held(). A git
    push over SSH records itself (committed rows) before its client is released and sends the
    follow-up tasks' messages after, as they change nothing the client could read."""
    held: list = []
    token = _held.set(held)
    try:
        yield held
    finally:
        _held.reset(token)


def send_held(held: list) -> None:
    for task, args, kwargs, options in held:
        Task.apply_async(task, args, kwargs, **options)
    held.clear()


app = Celery("hostsite", task_cls=HostsiteTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _recycle_connections(sender=None, **_kwargs) -> None:
    """Between tasks, as between requests: a connection past CONN_MAX_AGE, broken, or left in
    a transaction is closed, any other kept (settings.CELERY_DB_REUSE_MAX turns off Celery's
    closing of every connection around every task). Not for an eager task: it runs inside its
    caller's transaction."""
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


def ensure_broker_folders() -> None:
    """kombu's filesystem transport expects its folders to exist; create them on first use."""
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder", "processing_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


@worker_init.connect
def _worker_init(**_kwargs) -> None:
    ensure_broker_folders()
    options = app.conf.broker_transport_options or {}
    if options.get("processing_folder"):
        # Messages a killed worker had received go back to the queue before this one consumes
        # (its channel also checks every recover_interval seconds).
        recover_orphans(
            options["processing_folder"],
            options["data_folder_in"],
            lease=float(options.get("consumer_lease", 300)),
        )
