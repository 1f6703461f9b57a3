from django.apps import AppConfig


class BundlesConfig(AppConfig):
    name = "bundles"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from bundles import receivers  # noqa: F401 - connects the push_recorded receiver
