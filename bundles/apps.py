from django.apps import AppConfig


class BundlesConfig(AppConfig):
    name = "bundles"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from bundles import gitconfig, receivers  # noqa: F401 - receivers connects push_recorded
        from repos import extensions

        # Protocol v2 fetches learn of the repository's bundles from upload-pack itself.
        extensions.register_git_config(gitconfig.git_config)
