from django.apps import AppConfig


class BundlesConfig(AppConfig):
    name = "bundles"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Protocol v2 fetches learn of the repository's bundles from upload-pack itself, through
        # the git access backend bundles.access.BundleAccess (settings.GIT_ACCESS_BACKENDS).
        # Imported in ready(): these modules import models, which Django loads only after the apps.
        from bundles import receivers, tasks  # noqa: F401 - receivers connect signals; tasks registers what repos.enqueue sends by name
