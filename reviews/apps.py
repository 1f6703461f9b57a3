from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # What reviews adds to git requests, workspace pages and notification subjects is named
        # in settings (GIT_ACCESS_BACKENDS, WORKSPACE_PROPOSAL_LINKS, NOTIFICATION_SUBJECTS).
        # Imported in ready(): these modules import models, which Django loads only after the apps.
        from reviews import moderation, receivers, tasks  # noqa: F401 - receivers connect signals; tasks registers what repos.enqueue sends by name
