from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # What workspaces adds to git requests and to what each person may see is named in
        # settings (GIT_ACCESS_BACKENDS, VISIBILITY_RULE, REPUBLISHING_RULE), not registered here.
        # Imported in ready(): these modules import models, which Django loads only after the apps.
        from workspaces import receivers, tasks  # noqa: F401 - receivers connect signals; tasks registers what repos.enqueue sends by name
