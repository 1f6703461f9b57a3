"""Celery's broker transport and beat schedule, out of settings.py: which transport a broker URL
gets (hostsite.fsbroker or hostsite.redisbroker, both with late acks that survive a dying worker)
and the periodic tasks."""

from __future__ import annotations

import ssl
from datetime import timedelta
from pathlib import Path
from typing import Any

from hostsite.env import env_int, env_str


def broker_transport(
    url: str, broker_dir: Path, visibility_timeout: int
) -> tuple[str | None, dict[str, Any], dict[str, Any] | None]:
    """(transport, its options, SSL options or None) for a broker URL."""
    if url.startswith("filesystem://"):
        # kombu's filesystem transport: producers write into data_folder_out, consumers read
        # data_folder_in, so one shared folder makes a single-machine queue.
        return (
            "hostsite.fsbroker:Transport",
            {
                "data_folder_in": str(broker_dir / "queue"),
                "data_folder_out": str(broker_dir / "queue"),
                "control_folder": str(broker_dir / "control"),
                "processing_folder": str(broker_dir / "processing"),
                # Messages of a dead worker on this machine go back within this many seconds; a
                # worker on another machine sharing the folder counts as dead after the lease.
                "recover_interval": 5,
                "consumer_lease": visibility_timeout,
                "store_processed": False,
                # The worker polls the folder; at kombu's default of 1 s, with prefetch 1 and late acks,
                # it took one task a second, so a backlog (a push queues indexing, cleanup, bundles and
                # maintenance) delayed everything behind it. Listing a folder 10 times a second is free.
                "polling_interval": 0.1,
            },
            None,
        )
    if url.startswith(("redis://", "rediss://")):
        # A message of a dead worker is redelivered once its visibility timeout passes. Stock
        # kombu, that timeout had to exceed the longest task (Read the Docs re-ran 1-hour builds
        # when it did not), so redelivery took 6 hours; live workers renew theirs every tenth of it
        # (hostsite.redisbroker), so it is a lease: a few minutes, whatever a task's length.
        options: dict[str, Any] = {
            "visibility_timeout": visibility_timeout,
            "unacked_restore_interval": max(1, visibility_timeout // 10),
            "unacked_restore_throttle": 1,
        }
        # Deployments (or test runs of two checkouts) sharing one Redis database keep apart: kombu
        # keeps the unacked hash, its index and exchange bindings under fixed names otherwise.
        prefix = env_str("CELERY_KEY_PREFIX", "")
        if prefix:
            options["global_keyprefix"] = prefix
        # Named explicitly because the transport is: kombu's rediss:// default skips verification.
        use_ssl = {"ssl_cert_reqs": ssl.CERT_REQUIRED} if url.startswith("rediss://") else None
        return "hostsite.redisbroker:Transport", options, use_ssl
    return None, {}, None


def beat_schedule() -> dict[str, dict[str, Any]]:
    return {
        "schedule-maintenance": {
            "task": "repos.tasks.schedule_maintenance",
            "schedule": timedelta(minutes=env_int("MAINTENANCE_SCHEDULE_MINUTES", 60, minimum=1)),
        },
        "expire-archived-refs": {
            "task": "workspaces.tasks.expire_archived_refs",
            "schedule": timedelta(hours=1),
        },
        "purge-deleted-repositories": {
            "task": "repos.tasks.purge_deleted_repositories",
            "schedule": timedelta(hours=1),
        },
        "schedule-bundle-builds": {
            "task": "bundles.tasks.schedule_bundle_builds",
            "schedule": timedelta(minutes=env_int("BUNDLE_SCHEDULE_MINUTES", 15, minimum=1)),
        },
        "schedule-mirror-syncs": {
            "task": "repos.tasks.schedule_mirror_syncs",
            "schedule": timedelta(seconds=env_int("MIRROR_SCHEDULE_SECONDS", 60, minimum=5)),
        },
        "replay-spooled-pushes": {
            "task": "repos.tasks.replay_spooled_pushes",
            "schedule": timedelta(minutes=1),
        },
        # One mail per user with the day's notifications of the kinds they get as a digest.
        "send-notification-digests": {
            "task": "notifications.tasks.send_digests",
            "schedule": timedelta(hours=env_int("NOTIFICATION_DIGEST_HOURS", 24, minimum=1)),
        },
        "schedule-push-reconciliation": {
            "task": "repos.tasks.schedule_push_reconciliation",
            "schedule": timedelta(minutes=env_int("PUSH_RECONCILE_MINUTES", 60, minimum=1)),
        },
    }
