from django.apps import AppConfig


class SshgitConfig(AppConfig):
    name = "sshgit"
    verbose_name = "Git over SSH"
    default_auto_field = "django.db.models.BigAutoField"
