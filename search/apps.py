from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "search"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Keeps the index in every process: web workers (saved rows, pushes) and Celery workers.
        from search import receivers  # noqa: F401 - connects the receivers
