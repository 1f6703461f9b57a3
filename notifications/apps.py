from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): these modules import models, which Django loads only after the apps.
        from notifications import receivers, tasks  # noqa: F401 - receivers connect signals; tasks registers what repos.enqueue sends by name
