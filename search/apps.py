from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "search"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Keeps the index in every process: web workers (saved rows, pushes) and Celery workers.
        # Imported in ready(): these modules import models, which Django loads only after the apps.
        from search import receivers, tasks  # noqa: F401 - receivers connect signals; tasks registers what repos.enqueue sends by name
