from django.apps import AppConfig


class ShowworkConfig(AppConfig):
    name = "showwork"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Cache invalidation (showwork/cache.py), in every process that loads the app: web
        # workers, and the Celery worker that runs merged-ref cleanup.
        from showwork import receivers  # noqa: F401 - connects the receivers
