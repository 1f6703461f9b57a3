from django.apps import AppConfig


class ShowworkConfig(AppConfig):
    name = "showwork"
    default_auto_field = "django.db.models.BigAutoField"
