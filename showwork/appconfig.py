"""The app config that connects showwork's signal receivers (cache invalidation).

Kept apart from showwork/apps.py (the graph package's), extending it, so the receivers are
connected in every process that loads the app: web workers and the Celery worker that runs
merged-ref cleanup.
"""

from showwork.apps import ShowworkConfig


class ShowworkAppConfig(ShowworkConfig):
    def ready(self) -> None:
        super().ready()
        from showwork import receivers  # noqa: F401 - connects the receivers
