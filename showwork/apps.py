from django.apps import AppConfig


class ShowworkConfig(AppConfig):
    name = "showwork"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Cache invalidation (showwork/cache.py), in every process that loads the app: web
        # workers, and the Celery worker that runs merged-ref cleanup.
        # Imported in ready(): these modules import models, which Django loads only after the apps.
        from showwork import receivers, tasks  # noqa: F401 - receivers connect signals; tasks registers what repos.enqueue sends by name
