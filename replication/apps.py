from django.apps import AppConfig


class ReplicationConfig(AppConfig):
    name = "replication"
    verbose_name = "Nodes and replication"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): these modules import models, which Django loads only after the apps.
        import replication.marks  # noqa: F401 - read-your-writes marks (a receiver)
        from replication import (
            heartbeat,  # noqa: F401 - starts on worker_ready (a receiver)
            receivers,  # noqa: F401 - connects the signal receivers
            tasks,  # noqa: F401 - registers what repos.enqueue sends by name
        )
