"""The Celery app. Configuration comes from Django settings (CELERY_* names)."""

import os
from pathlib import Path

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hostsite.settings")

app = Celery("hostsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


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
        from hostsite.fsbroker import recover_orphans

        recover_orphans(
            options["processing_folder"],
            options["data_folder_in"],
            lease=float(options.get("consumer_lease", 300)),
        )
