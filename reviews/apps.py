from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from repos import extensions
        from reviews import moderation, receivers  # noqa: F401 - moderation connects a signal

        # post-receive tells a `refs/for` pusher where their proposal is.
        extensions.register_hook_environment(receivers.hook_environment)
