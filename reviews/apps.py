from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # What reviews adds to a push's hooks is a git access backend named in settings
        # (reviews.access.ReviewAccess), not registered here.
        # events registers the "proposal:<id>" notification subject; the others connect signals.
        from reviews import events, moderation, queues, receivers  # noqa: F401
        from workspaces import ref_links

        # Workspace pages name each ref's open proposal; workspaces cannot import reviews.
        ref_links.register(queues.open_proposal_numbers)
