from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # What workspaces adds to git requests is a git access backend named in settings
        # (workspaces.access.WorkspaceAccess), not registered here.
        from repos import visibility as access
        from workspaces import receivers, visibility  # noqa: F401 - receivers connects signals

        # What each person may see: one rule, asked by every exit.
        access.register(visibility.view_for)
