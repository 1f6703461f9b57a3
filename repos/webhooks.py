"""Webhooks: a signed JSON event POSTed for each push, delivered by Celery with retries.

hg.mozilla.org's replication-log idea: other systems react to a push seconds after it
happens. Each delivery is signed with HMAC-SHA256 over the exact body, in
`X-Hostsite-Signature-256: sha256=<hex>` (the scheme GitHub uses, so existing verifiers fit).
Receivers on private, loopback or link-local addresses are refused unless
WEBHOOK_ALLOW_PRIVATE_TARGETS is on: a webhook must not become a way to reach the server's
own network (SSRF). The check runs at creation and again at each delivery (DNS can change),
and a delivery connects to the address its check allowed (repos.netguard), so a name that
answers a public address for the check and a private one a moment later reaches nothing else.

A payload shows what an anonymous reader may see of the push (repos.visibility), and it is
built again at each attempt: a push taken down or hidden after it landed, while its
delivery waits for a retry, is not sent. Nothing of such a push is sent at all.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import secrets
import time
from urllib.parse import SplitResult, urlsplit

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.utils import timezone

from repos import netguard
from repos.errors import InvalidInput
from repos.models import DeliveryStatus, Push, Repository, Webhook, WebhookDelivery
from repos.pushlog import PushFilter
from repos.visibility import View, view_for

log = logging.getLogger(__name__)
SIGNATURE_HEADER = "X-Hostsite-Signature-256"
TIMEOUT = 10


class DeliveryFailed(Exception):
    """A delivery attempt that may succeed later (retried with backoff)."""


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def checked_target(url: str) -> tuple[SplitResult, int, list[str]]:
    """The URL's parts, its port, and the addresses its host resolves to, every one public
    (netguard's rule) unless WEBHOOK_ALLOW_PRIVATE_TARGETS. InvalidInput says why not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("Webhook URLs are http:// or https:// URLs.", fields={"url": ["invalid"]})
    try:
        port = parts.port or netguard.DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise InvalidInput("The webhook URL's port is not valid.", fields={"url": ["invalid"]}) from None
    try:
        addresses = netguard.public_addresses(
            parts.hostname, port, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_TARGETS
        )
    except netguard.SourceRefused as exc:
        raise InvalidInput(exc.message, fields={"url": ["refused"]}) from None
    return parts, port, addresses


@transaction.atomic
def webhook_create(
    *, repo: Repository, url: str, secret: str = "", include_workspaces: bool = True, created_by=None
) -> Webhook:
    url = (url or "").strip()
    if len(url) > 2000:
        raise InvalidInput("URLs are at most 2000 characters.", fields={"url": ["too_long"]})
    checked_target(url)
    secret = secret or secrets.token_urlsafe(32)
    if len(secret) > 200:
        raise InvalidInput("Secrets are at most 200 characters.", fields={"secret": ["too_long"]})
    return Webhook.objects.create(
        repository=repo, url=url, secret=secret, include_workspaces=include_workspaces, created_by=created_by
    )


WITHHELD = "withheld: the push's content was taken down or hidden by a moderator"


def payload_for(push: Push, view: View | None = None) -> dict | None:
    """The event as `view` may see it (default: an anonymous reader's), or None when nothing
    of the push is left to show."""
    repo = push.repository
    shown = PushFilter(repo, view if view is not None else view_for(repo, AnonymousUser()))
    refs = shown.refs(push.ref_updates.all())
    shas = shown.shas([c.sha for c in push.commits.all()])
    if not refs and not shas:
        return None
    return {
        "event": "push",
        "repository": {"id": repo.pk, "full_name": repo.full_name, "default_branch": repo.default_branch},
        "push": {
            "id": push.pk,
            "user": push.pusher_name,
            "date": int(push.created_at.timestamp()),
            "workspace": push.touches_workspace,
            # The repository's change number in the replication log (repos.changelog).
            "generation": _generation(push),
            "refs": [{"ref": u.ref, "old": u.old, "new": u.new, "forced": u.forced} for u in refs],
            "changesets": shas,
        },
    }


def _generation(push: Push) -> int | None:
    # Every recorded push has its log row; getattr's default covers one that was never logged.
    change = getattr(push, "change", None)
    return change.generation if change is not None else None


def _body(payload: dict) -> str:
    return json.dumps(payload, separators=(",", ":"), sort_keys=True)


def deliveries_for_push(push_id: int) -> list[int]:
    """Create one pending delivery per active webhook that wants this push; return their ids."""
    push = Push.objects.select_related("repository__owner", "change").filter(pk=push_id).first()
    if push is None:
        return []
    hooks = Webhook.objects.filter(repository=push.repository, active=True)
    if push.touches_workspace:
        hooks = hooks.filter(include_workspaces=True)
    hooks = list(hooks)  # type: ignore[assignment]
    if not hooks:
        return []
    payload = payload_for(push)
    if payload is None:
        return []
    body = _body(payload)
    with transaction.atomic():
        return [WebhookDelivery.objects.create(webhook=hook, push=push, payload=body).pk for hook in hooks]


def attempt(delivery: WebhookDelivery) -> WebhookDelivery:
    """POST the delivery once. Records the outcome; raises DeliveryFailed if worth retrying.
    The body is built now, from the push as it may be seen now; a push with nothing left to
    show is not sent, and the delivery fails for good (WITHHELD)."""
    hook = delivery.webhook
    push = Push.objects.select_related("repository__owner", "change").filter(pk=delivery.push_id).first()  # type: ignore[misc]
    if push is not None:
        payload = payload_for(push)
        if payload is None:
            WebhookDelivery.objects.filter(pk=delivery.pk).update(
                status=DeliveryStatus.FAILED, error=WITHHELD, payload="", last_attempt_at=timezone.now()
            )
            delivery.refresh_from_db()
            return delivery
        if _body(payload) != delivery.payload:
            delivery.payload = _body(payload)
            WebhookDelivery.objects.filter(pk=delivery.pk).update(payload=delivery.payload)
    body = delivery.payload.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "hostsite-webhook/1",
        "X-Hostsite-Event": delivery.event,
        "X-Hostsite-Delivery": str(delivery.pk),
        SIGNATURE_HEADER: sign(hook.secret, body),
    }
    started = time.monotonic()
    status, excerpt, error = None, "", ""
    try:
        status, excerpt = _post(hook.url, body, headers)
    except InvalidInput as exc:
        error = exc.message
    except (OSError, http.client.HTTPException, ValueError) as exc:
        error = str(exc) or type(exc).__name__
    ok = status is not None and 200 <= status < 300
    now = timezone.now()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        attempts=delivery.attempts + 1,
        response_status=status,
        response_excerpt=excerpt[:500],
        error=error[:500],
        duration_ms=int((time.monotonic() - started) * 1000),
        last_attempt_at=now,
        status=DeliveryStatus.DELIVERED if ok else delivery.status,
        delivered_at=now if ok else None,
    )
    delivery.refresh_from_db()
    if not ok:
        raise DeliveryFailed(error or f"HTTP {status}")
    return delivery


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    """POST to the address the check resolved and allowed, never to what a second lookup of the
    name would say (DNS rebinding): the Host header and TLS (SNI, the certificate) still name
    the host. A redirect is the receiver's answer, not followed: it could point anywhere."""
    parts, port, addresses = checked_target(url)
    host = parts.hostname or ""
    connection = netguard.pinned_connection(parts.scheme, host, addresses[0], port, timeout=TIMEOUT)
    try:
        connection.request(
            "POST", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), body, headers
        )
        response = connection.getresponse()
        return response.status, response.read(500).decode("utf-8", "replace")
    finally:
        connection.close()


def give_up(delivery_id: int) -> None:
    WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING).update(
        status=DeliveryStatus.FAILED
    )
