from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Imports and mirrors"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): this module imports models, which Django loads only after the apps.
        from sources import tasks  # noqa: F401 - registers the tasks repos.enqueue sends by name
