from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # What reviews adds to a push's hooks is a git access backend named in settings
        # (reviews.access.ReviewAccess), not registered here.
        # events registers the "proposal:<id>" notification subject; the others connect signals.
        from reviews import events, moderation, receivers  # noqa: F401
