from django.apps import AppConfig


class BundlesConfig(AppConfig):
    name = "bundles"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Protocol v2 fetches learn of the repository's bundles from upload-pack itself, through
        # the git access backend bundles.access.BundleAccess (settings.GIT_ACCESS_BACKENDS).
        from bundles import receivers  # noqa: F401 - receivers connects push_recorded
