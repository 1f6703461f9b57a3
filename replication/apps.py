from django.apps import AppConfig


class ReplicationConfig(AppConfig):
    name = "replication"
    verbose_name = "Nodes and replication"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import replication.marks  # noqa: F401 - read-your-writes marks (a receiver)
        from replication import receivers  # noqa: F401 - connects the signal receivers
