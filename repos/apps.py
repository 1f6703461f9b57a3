from pathlib import Path

from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_migrate

from hostsite.celery import ensure_broker_folders
from repos.storage import install_hooks


class ReposConfig(AppConfig):
    name = "repos"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): these modules import models, which Django loads only after the apps.
        from repos import (
            ratelimits,  # noqa: F401 - registers its system check of the rate limits' cache
            tasks,  # noqa: F401 - registers the tasks repos.enqueue sends by name
        )
        from repos.api import schema  # noqa: F401 - registers the OpenAPI auth extensions

        # The web process enqueues tasks too, so the filesystem broker's folders must exist
        # before the first .delay(), not only when a worker starts.
        ensure_broker_folders()
        # Every deploy migrates: that is when the hooks shared by all repositories are refreshed.
        post_migrate.connect(_install_hooks, sender=self)
        # WhiteNoise warns on every start when STATIC_ROOT is missing (before collectstatic).
        Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)


def _install_hooks(**_kwargs) -> None:
    install_hooks()
