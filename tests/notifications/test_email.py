"""Notification mail through a real SMTP server on loopback (aiosmtpd): threading headers, the
signed one-click unsubscribe link, escaping in the HTML part, no header injection, per-kind
preferences, the daily digest, and a retry after the server refuses once."""

from __future__ import annotations

import socket
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
from aiosmtpd.controller import Controller
from django.core import signing
from django.test import Client

from notifications import email, mailer, tasks
from notifications.models import Notification, Preference, Subscription
from notifications.services import notify, preferences_set
from reviews.models import Proposal
from tests.eager import FOLLOWERS, run_followers
from tests.factories import RepositoryFactory, UserFactory

pytestmark = pytest.mark.django_db

MAIL_TASKS = frozenset({"notifications.tasks.send_notification_email", "notifications.tasks.send_digest"})


class Handler:
    """Keeps what it accepts; refuses the next `refuse` messages with a temporary error."""

    def __init__(self) -> None:
        self.received: list = []
        self.refuse = 0
        self.attempts = 0

    async def handle_DATA(self, server, session, envelope):
        self.attempts += 1
        if self.refuse:
            self.refuse -= 1
            return "451 4.3.0 Try again later"
        self.received.append(envelope)
        return "250 OK"

    def messages(self) -> list[EmailMessage]:
        return [message_from_bytes(e.original_content, policy=default_policy) for e in self.received]  # type: ignore[misc]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def smtp_server():
    handler = Handler()
    controller = Controller(handler, hostname="127.0.0.1", port=_free_port())
    controller.start()
    try:
        yield handler, controller.port
    finally:
        controller.stop()


@pytest.fixture
def smtp(smtp_server, settings, monkeypatch):
    handler, port = smtp_server
    handler.received.clear()
    handler.refuse = handler.attempts = 0
    settings.EMAIL_ENABLED = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.SITE_URL = "https://git.example.org/"
    settings.DEFAULT_FROM_EMAIL = "hostsite <notifications@git.example.org>"
    run_followers(monkeypatch, FOLLOWERS | MAIL_TASKS)
    return handler


@pytest.fixture
def world(db):
    owner = UserFactory(username="owner")
    bob = UserFactory(username="bob")
    repo = RepositoryFactory(owner=owner, name="proj")
    # Written straight to the table: an old row or a path that skipped the title's cleaning.
    proposal = Proposal.objects.create(
        repository=repo,
        number=3,
        author=owner,
        source_ref="refs/users/owner/x",
        target_branch="main",
        title="Fix <script>alert(1)</script>\r\nBcc: victim@example.com",
    )
    return SimpleNamespace(owner=owner, bob=bob, repo=repo, proposal=proposal)


def comment_notice(world, body: str = "<script>steal()</script> & more", user=None) -> Notification:
    owner, bob, repo, proposal = world.owner, world.bob, world.repo, world.proposal
    return notify(
        user or bob,
        kind="comment",
        text=f"owner commented in #3 on owner/proj: {proposal.title}",
        url="/owner/proj/proposals/3",
        repository=repo,
        actor=owner,
        subject=f"proposal:{proposal.pk}",
        body=body,
    )


def parts(message: EmailMessage) -> tuple[str, str]:
    plain = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert plain is not None and html is not None
    return plain.get_content(), html.get_content()


def test_threading_headers_escaping_and_no_header_injection(world, smtp, django_capture_on_commit_callbacks):
    proposal = world.proposal
    with django_capture_on_commit_callbacks(execute=True):
        first = comment_notice(world)
        second = comment_notice(world, body="second")
    assert [e.rcpt_tos for e in smtp.received] == [["bob@example.invalid"], ["bob@example.invalid"]]
    one, two = smtp.messages()
    root = f"<proposal-{proposal.pk}@git.example.org>"
    assert one["Message-ID"] == f"<notification-{first.pk}@git.example.org>"
    assert two["Message-ID"] == f"<notification-{second.pk}@git.example.org>"
    assert one["In-Reply-To"] == one["References"] == two["In-Reply-To"] == two["References"] == root
    # CR/LF in the title became a space: still one Subject, and no Bcc header.
    assert one["Subject"] == "[owner/proj] #3 Fix <script>alert(1)</script> Bcc: victim@example.com"
    assert "Bcc" not in one and one.get_all("Subject") == [one["Subject"]]
    assert one["From"] == "hostsite <notifications@git.example.org>"
    assert one["List-Id"] == "owner/proj <proj.owner.git.example.org>"
    assert one["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert one["List-Unsubscribe"].strip().startswith("<https://git.example.org/notifications/unsubscribe/")
    plain, html = parts(one)
    assert "<script>steal()</script> & more" in plain
    assert "&lt;script&gt;steal()&lt;/script&gt; &amp; more" in html and "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="https://git.example.org/owner/proj/proposals/3"' in html
    first.refresh_from_db()
    assert first.emailed_at is not None
    # Redelivered after it was sent: not sent twice.
    assert tasks.send_notification_email.apply(args=[first.pk]).get() == "already sent"
    assert len(smtp.received) == 2


def _unsubscribe_path(message: EmailMessage) -> str:
    return urlsplit(message["List-Unsubscribe"].strip().strip("<>")).path


def test_one_click_unsubscribe_mutes_the_subject_without_login(
    world, smtp, django_capture_on_commit_callbacks
):
    bob, proposal = world.bob, world.proposal
    with django_capture_on_commit_callbacks(execute=True):
        comment_notice(world)
    path = _unsubscribe_path(smtp.messages()[0])
    client = Client(enforce_csrf_checks=True)  # a mail client: no cookie, no CSRF token
    page = client.get(path)
    assert page.status_code == 200 and b"Unsubscribe" in page.content
    assert not Subscription.objects.exists()  # a GET (a link scanner) changes nothing
    response = client.post(path, {"List-Unsubscribe": "One-Click"})
    assert response.status_code == 200
    row = Subscription.objects.get(user=bob)
    assert row.subject == f"proposal:{proposal.pk}" and row.subscribed is False


def test_forged_or_broken_tokens_are_refused(world, smtp):
    owner, bob, proposal = world.owner, world.bob, world.proposal
    good = email.unsubscribe_token(bob, subject=f"proposal:{proposal.pk}")
    forged = signing.dumps({"u": owner.pk, "s": f"proposal:{proposal.pk}"}, salt="another.salt")
    tampered = good[:-3] + ("aaa" if not good.endswith("aaa") else "bbb")
    client = Client()
    for token in (forged, tampered, "x", "a" * 500):
        assert client.post(f"/notifications/unsubscribe/{token}").status_code == 400
        assert client.get(f"/notifications/unsubscribe/{token}").status_code == 400
    assert not Subscription.objects.exists()


def test_a_mail_without_subject_unsubscribes_from_its_kind(world, smtp, django_capture_on_commit_callbacks):
    bob, repo = world.bob, world.repo
    with django_capture_on_commit_callbacks(execute=True):
        notify(bob, kind="mirror_failing", text="The mirror of owner/proj cannot sync", repository=repo)
    message = smtp.messages()[0]
    assert (
        "In-Reply-To" not in message
        and message["Subject"] == "[owner/proj] The mirror of owner/proj cannot sync"
    )
    assert Client().post(_unsubscribe_path(message)).status_code == 200
    assert Preference.objects.get(user=bob, kind="mirror_failing").delivery == "web"


def test_no_mail_for_web_only_digest_kinds_or_invalid_addresses(
    world, smtp, django_capture_on_commit_callbacks
):
    bob, repo = world.bob, world.repo
    preferences_set(user=bob, choices={"comment": "web"})
    broken = UserFactory(username="broken", email="broken@example.invalid\r\nBcc: victim@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        comment_notice(world)  # web only
        notify(bob, kind="proposal_opened", text="digest kind", repository=repo)
        late = comment_notice(world, user=broken)
    assert smtp.received == [] and smtp.attempts == 0
    # No task was queued for the invalid address; one queued anyway (the address changed) sends nothing.
    assert mailer.send_notification(late.pk) == "no address"
    assert Notification.objects.filter(emailed_at__isnull=False).count() == 0


def test_a_refused_send_is_retried(world, smtp, monkeypatch, django_capture_on_commit_callbacks):
    queued = run_followers(monkeypatch)  # queued, not sent: run below as a worker would
    with django_capture_on_commit_callbacks(execute=True):
        notice = comment_notice(world)
    assert queued == [("notifications.tasks.send_notification_email", (notice.pk,))]
    smtp.refuse = 1
    # Celery's eager retry runs the task again at once (a worker would wait the backoff).
    assert tasks.send_notification_email.apply(args=[notice.pk], throw=False).get() == "sent"
    assert smtp.attempts == 2 and len(smtp.received) == 1
    notice.refresh_from_db()
    assert notice.emailed_at is not None


def test_daily_digest_groups_each_users_digest_kinds(world, smtp, django_capture_on_commit_callbacks):
    bob, repo = world.bob, world.repo
    carol = UserFactory(username="carol")
    with django_capture_on_commit_callbacks(execute=True):
        for who, n in ((bob, 1), (bob, 2), (carol, 3)):
            notify(
                who,
                kind="proposal_opened",
                text=f"opened <{n}>",
                url=f"/owner/proj/proposals/{n}",
                repository=repo,
            )
        notify(bob, kind="comment", text="mailed at once", repository=repo)
        preferences_set(user=carol, choices={"ref_archived": "web"})
        notify(carol, kind="ref_archived", text="web only", repository=repo)
    smtp.received.clear()  # the comment went at once
    assert tasks.send_digests.apply().get() == "queued 2"
    by_rcpt = {e.rcpt_tos[0]: m for e, m in zip(smtp.received, smtp.messages(), strict=True)}
    assert set(by_rcpt) == {"bob@example.invalid", "carol@example.invalid"}
    bob_plain, bob_html = parts(by_rcpt["bob@example.invalid"])
    assert "opened <1>" in bob_plain and "opened <2>" in bob_plain and "opened <3>" not in bob_plain
    assert "mailed at once" not in bob_plain and "opened &lt;1&gt;" in bob_html
    carol_plain, _ = parts(by_rcpt["carol@example.invalid"])
    assert "opened <3>" in carol_plain and "web only" not in carol_plain
    assert by_rcpt["bob@example.invalid"]["Subject"] == "Your daily digest: 2 notifications"
    assert by_rcpt["bob@example.invalid"]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # Sent once: the next run finds nothing new.
    smtp.received.clear()
    tasks.send_digests.apply()
    assert smtp.received == []
    # Its unsubscribe link turns every digest kind of bob's to the site only.
    assert Client().post(_unsubscribe_path(by_rcpt["bob@example.invalid"])).status_code == 200
    assert Preference.objects.get(user=bob, kind="proposal_opened").delivery == "web"
