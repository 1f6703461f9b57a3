from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # What reviews adds to a push's hooks is a git access backend named in settings
        # (reviews.access.ReviewAccess), not registered here.
        from reviews import moderation, receivers  # noqa: F401 - both connect signals
