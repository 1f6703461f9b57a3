"""Webhooks: signed deliveries for each push, retried with backoff by the real worker,
against a real HTTP receiver on loopback; plus the SSRF guard and the delivery log."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from repos import services, webhooks
from repos.errors import InvalidInput
from repos.models import DeliveryStatus, Push, WebhookDelivery
from tests.factories import RepositoryFactory
from tests.support.wait import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


class Receiver:
    """Records every request; answers with the queued statuses, then 200."""

    def __init__(self, statuses=()):
        self.requests: list[tuple[dict, bytes]] = []
        self.statuses = list(statuses)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"thanks" if status == 200 else b"try later")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(statuses=()):
        r = Receiver(statuses)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


@pytest.mark.live
def test_push_is_delivered_signed(world, receiver, celery_worker_process, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    r = receiver()
    hook = webhooks.webhook_create(repo=world.repo, url=r.url, secret="s3cret")
    sha = world.owner.commit("hooked")
    assert world.owner.push("main").returncode == 0
    wait_until(lambda: r.requests, timeout=60, what="a delivery", alive=celery_worker_process)
    headers, body = r.requests[0]
    expected = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert headers[webhooks.SIGNATURE_HEADER] == expected
    assert headers["X-Hostsite-Event"] == "push" and headers["Content-Type"] == "application/json"
    event = json.loads(body)
    push = Push.objects.filter(repository=world.repo).latest("pk")
    assert event["push"]["id"] == push.pk and event["push"]["user"] == "owner"
    assert event["push"]["changesets"] == [sha]
    assert event["push"]["refs"] == [
        {"ref": "refs/heads/main", "old": world.base_sha, "new": sha, "forced": False}
    ]
    assert event["repository"]["full_name"] == "owner/project"
    delivery = WebhookDelivery.objects.get(webhook=hook)
    wait_until(
        lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == DeliveryStatus.DELIVERED,
        timeout=60,
        what="the delivery marked delivered",
        alive=celery_worker_process,
    )
    delivery.refresh_from_db()
    assert (
        delivery.attempts == 1 and delivery.response_status == 200 and delivery.response_excerpt == "thanks"
    )


@pytest.mark.live
def test_failed_deliveries_are_retried_with_backoff(world, receiver, celery_worker_process, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    r = receiver(statuses=[500, 503])
    hook = webhooks.webhook_create(repo=world.repo, url=r.url)
    world.owner.commit("retry me")
    assert world.owner.push("main").returncode == 0
    wait_until(lambda: len(r.requests) == 3, timeout=60, what="three attempts", alive=celery_worker_process)
    bodies = {body for _headers, body in r.requests}
    assert len(bodies) == 1  # the same event each time
    delivery = WebhookDelivery.objects.get(webhook=hook)
    wait_until(
        lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == DeliveryStatus.DELIVERED,
        timeout=60,
        what="the delivery marked delivered",
        alive=celery_worker_process,
    )
    delivery.refresh_from_db()
    assert delivery.attempts == 3
    # Backoff: 1 s, then 2 s, between attempts (WEBHOOK_RETRY_BASE_SECONDS=1 in tests).
    assert delivery.delivered_at - delivery.created_at >= timedelta(seconds=2.5)
    assert delivery.delivered_at - delivery.created_at < timedelta(seconds=15)


@pytest.mark.live
def test_workspace_pushes_can_be_left_out(world, receiver, celery_worker_process, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    everything, canonical = receiver(), receiver()
    webhooks.webhook_create(repo=world.repo, url=everything.url)
    webhooks.webhook_create(repo=world.repo, url=canonical.url, include_workspaces=False)
    alice = world.add("alice")
    alice.commit("alice")
    assert alice.push("HEAD:refs/users/alice/x").returncode == 0
    wait_until(
        lambda: everything.requests, timeout=60, what="the workspace push", alive=celery_worker_process
    )
    # One fan-out task creates every hook's delivery at once: once the first exists, the
    # canonical-only hook's absence is final, not a matter of waiting longer.
    assert WebhookDelivery.objects.filter(webhook__include_workspaces=True).count() == 1
    assert not WebhookDelivery.objects.filter(webhook__include_workspaces=False).exists()
    assert canonical.requests == []
    # And a canonical push does reach it.
    world.owner.commit("canonical")
    assert world.owner.push("main").returncode == 0
    wait_until(lambda: canonical.requests, timeout=60, what="the canonical push", alive=celery_worker_process)


def test_private_targets_are_refused(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    repo = RepositoryFactory()
    for url in [
        "http://127.0.0.1:8000/x",
        "http://localhost/x",
        "http://10.0.0.1/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data",
        "ftp://example.org/",
        "file:///etc/passwd",
        "nonsense",
    ]:
        with pytest.raises(InvalidInput):
            webhooks.webhook_create(repo=repo, url=url)


def test_give_up_after_max_attempts(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    from repos.tasks import deliver_webhook

    r = Receiver(statuses=[500, 500, 500])
    try:
        repo = RepositoryFactory()
        hook = webhooks.webhook_create(repo=repo, url=r.url)
        delivery = WebhookDelivery.objects.create(webhook=hook, payload='{"event": "push"}')
        # The task body, run in this process: the first failure asks for a retry...
        from celery.exceptions import Retry

        with pytest.raises(Retry):
            deliver_webhook.run(delivery.pk)
        # ...and the second gives up.
        assert deliver_webhook.run(delivery.pk) == "failed"
        delivery.refresh_from_db()
        assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 2
        assert delivery.response_status == 500
    finally:
        r.close()


def test_redirects_are_not_followed(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    r = Receiver(statuses=[302])
    try:
        repo = RepositoryFactory()
        hook = webhooks.webhook_create(repo=repo, url=r.url)
        delivery = WebhookDelivery.objects.create(webhook=hook, payload="{}")
        with pytest.raises(webhooks.DeliveryFailed):
            webhooks.attempt(delivery)
        assert len(r.requests) == 1
    finally:
        r.close()


def test_webhook_api_is_admin_only(settings):
    from rest_framework.test import APIClient

    from tests.factories import UserFactory

    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    owner = UserFactory(username="own")
    repo = RepositoryFactory(owner=owner, name="p")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Bearer " + services.token_create(user=owner, scope="write")[1])
    response = api.post("/api/v1/repos/own/p/hooks", {"url": "http://127.0.0.1:9/x"}, format="json")
    assert response.status_code == 201 and len(response.json()["secret"]) >= 32
    hook_id = response.json()["id"]
    listing = api.get("/api/v1/repos/own/p/hooks").json()
    assert listing["count"] == 1 and "secret" not in listing["results"][0]
    assert api.get(f"/api/v1/repos/own/p/hooks/{hook_id}/deliveries").json()["count"] == 0
    stranger = APIClient()
    stranger.credentials(
        HTTP_AUTHORIZATION="Bearer " + services.token_create(user=UserFactory(), scope="write")[1]
    )
    assert stranger.get("/api/v1/repos/own/p/hooks").status_code == 403
    assert stranger.delete(f"/api/v1/repos/own/p/hooks/{hook_id}").status_code == 403
    assert api.delete(f"/api/v1/repos/own/p/hooks/{hook_id}").status_code == 204
    assert repo.webhooks.count() == 0


def test_webhook_settings_page(settings):
    import re

    from django.test import Client

    from tests.factories import UserFactory

    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    owner = UserFactory(username="own")
    repo = RepositoryFactory(owner=owner, name="p")
    client = Client()
    client.force_login(owner)
    page = client.post(
        "/own/p/settings/webhooks", {"url": "http://127.0.0.1:9/in", "include_workspaces": "on"}, follow=True
    ).content.decode()
    assert re.search(r"<title>Settings · own/p</title>", page)
    hook = repo.webhooks.get()
    assert f'value="{hook.secret}"' in page  # shown once...
    assert hook.secret not in client.get("/own/p/settings").content.decode()  # ...and not again
    assert "http://127.0.0.1:9/in" in page and "No deliveries yet." in page
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    page = client.post("/own/p/settings/webhooks", {"url": "http://10.1.2.3/x"}, follow=True).content.decode()
    assert "non-public address" in page and repo.webhooks.count() == 1
    client.post(f"/own/p/settings/webhooks/{hook.pk}/delete")
    assert repo.webhooks.count() == 0
    stranger = Client()
    stranger.force_login(UserFactory())
    assert stranger.post("/own/p/settings/webhooks", {"url": "http://127.0.0.1:9/in"}).status_code == 404
