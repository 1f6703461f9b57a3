"""Thin Celery tasks: take ids, load rows, call a service."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from gitcore.git import GitError, GitTimeout
from render import blobrender
from repos import browse, diffcache, enqueue, lifecycle, maintenance, push_spool, reconcile, webhooks
from repos.models import DeliveryStatus, Repository, WebhookDelivery

log = logging.getLogger(__name__)


@shared_task(autoretry_for=(GitTimeout,), retry_backoff=60, max_retries=3, acks_late=True, ignore_result=True)
def maintain_repository(repo_id: int) -> str:
    repo = Repository.objects.filter(pk=repo_id).select_related("owner").first()
    if repo is None:
        return "gone"
    result = maintenance.maintain_repository(repo)
    return "done" if result.ran else f"skipped: {result.reason}"


@shared_task(ignore_result=True)
def schedule_maintenance() -> int:
    """Periodic (Celery beat): enqueue maintenance for every repository that is due."""
    ids = list(maintenance.repositories_due_for_maintenance().values_list("pk", flat=True)[:1000])
    for repo_id in ids:
        enqueue.send("repos.tasks.maintain_repository", repo_id)
    return len(ids)


@shared_task(bind=True, acks_late=True, ignore_result=True, max_retries=None)
def deliver_webhook(self, delivery_id: int) -> str:
    """One attempt; on failure, retry with exponential backoff up to WEBHOOK_MAX_ATTEMPTS."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != DeliveryStatus.PENDING or not delivery.webhook.active:
        return "skipped"
    try:
        webhooks.attempt(delivery)
    except webhooks.DeliveryFailed:
        attempts = WebhookDelivery.objects.values_list("attempts", flat=True).get(pk=delivery_id)
        if attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
            webhooks.give_up(delivery_id)
            return "failed"
        backoff = min(settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (attempts - 1), 3600)
        raise self.retry(countdown=backoff) from None
    return "delivered"


@shared_task(ignore_result=True)
def fan_out_webhooks(push_id: int) -> int:
    ids = webhooks.deliveries_for_push(push_id)
    for delivery_id in ids:
        enqueue.send("repos.tasks.deliver_webhook", delivery_id)
    return len(ids)


@shared_task(ignore_result=True)
def purge_deleted_repositories() -> int:
    """Periodic (Celery beat): purge soft-deleted repositories past their retention period."""
    purged = 0
    for repo_id in list(lifecycle.repositories_due_for_purge().values_list("pk", flat=True)[:100]):
        try:
            purged += lifecycle.repository_purge(repo_id=repo_id)
        except Exception:
            # One repository's trouble (its bundle storage unreachable) must not stop the rest.
            log.exception("could not purge repository %s; the next run retries", repo_id)
    return purged


@shared_task(acks_late=True, ignore_result=True)
def repack_fresh(repo_id: int) -> str:
    """A full repack with a fresh delta search after history arrived packed by someone else."""
    repo = Repository.objects.filter(pk=repo_id, deleted_at__isnull=True).first()
    if repo is None:
        return "gone"
    maintenance.repack_fresh(repo)
    return "done"


@shared_task(ignore_result=True)
def replay_spooled_pushes() -> int:
    """Periodic (Celery beat, every minute): record the pushes post-receive spooled that no web
    process recorded (the database was down, the worker died). Idempotent (repos.push_spool)."""
    return push_spool.replay().recorded


@shared_task(ignore_result=True)
def schedule_push_reconciliation() -> int:
    """Periodic (Celery beat, PUSH_RECONCILE_MINUTES): compare each repository's refs with its
    pushlog. The spool goes first, so a push that only waits for its replay is not 'recovered'."""
    push_spool.replay()
    ids = list(Repository.objects.filter(deleted_at__isnull=True).values_list("pk", flat=True))
    for repo_id in ids:
        enqueue.send("repos.tasks.reconcile_pushes", repo_id)
    return len(ids)


@shared_task(acks_late=True, ignore_result=True)
def reconcile_pushes(repo_id: int) -> str:
    """Record the ref changes on disk the pushlog lacks as a 'recovered' push (repos.reconcile)."""
    repo = Repository.objects.filter(pk=repo_id).select_related("owner").first()
    if repo is None:
        return "gone"
    return reconcile.reconcile_repository(repo).outcome


@shared_task(ignore_result=True)
def highlight_diff(repo_path: str, base: str | None, head: str, options: dict, paths: list[str]) -> str:
    """Highlight all of a diff a page showed cut at its budget (repos.diffcache). Takes the
    repository's path, not its id: that is what the diff's cache key is made of (and it never
    changes: names do not reach the filesystem). A repository gone since: nothing to do."""
    try:
        diffcache.highlight_fully(repo_path, base, head, options, paths)
    except GitError as exc:
        log.info("diff %s..%s in %s not highlighted: %s", base, head, repo_path, exc)
        return "failed"
    return "done"


@shared_task(ignore_result=True, soft_time_limit=60)
def highlight_blob(repo_id: int, blob: str, path: str) -> str:
    """Highlight all of a file a page showed cut at its budget (render.blobrender). The soft
    limit stops a lexer stuck inside one regex, which the CPU limit checked between tokens cannot."""
    from celery.exceptions import SoftTimeLimitExceeded

    repo = Repository.objects.filter(pk=repo_id).first()
    if repo is None:
        return "gone"
    try:
        text = browse.read_blob(repo.disk_path, blob).decode("utf-8", "replace")
    except GitError as exc:
        log.info("blob %s in %s not highlighted: %s", blob, repo.disk_path, exc)
        return "failed"
    try:
        blobrender.highlight_fully(blob, path, text)
    except SoftTimeLimitExceeded:
        blobrender.highlight_fully(blob, path, text, syntax=False)
        return "plain"
    return "done"
