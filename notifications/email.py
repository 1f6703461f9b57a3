"""Mail for notifications: one message per notification (threaded per subject) and one daily
digest per user. Everything that reaches a header is cleaned of control characters, and the
recipient's address is validated, so nothing a user typed can add a header; the HTML part is a
Django template, so everything a user typed is escaped.

Threading: each message has its own Message-ID, and In-Reply-To/References name a root id
that is the same for every message about one subject ("<proposal-12@host>"), so mail clients
show a proposal as one thread, as GitHub's notifications do."""

from __future__ import annotations

import re
from email.utils import formatdate
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import EmailMultiAlternatives
from django.core.validators import validate_email
from django.template.loader import render_to_string
from django.urls import reverse

from notifications import subjects
from notifications.models import Notification
from notifications.selectors import as_shown
from repos.siteurl import site_base

UNSUBSCRIBE_SALT = "notifications.unsubscribe"
SUBJECT_MAX = 200
# C0, C1, DEL and the Unicode line and paragraph separators: any of them could end a header
# line in some mail software.
_HEADER_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_LIST_LABEL = re.compile(r"[^A-Za-z0-9-]+")


def header_text(value: object, limit: int = SUBJECT_MAX) -> str:
    text = " ".join(_HEADER_CONTROL.sub(" ", str(value or "")).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def address_of(user) -> str | None:
    """The user's address when it is one a mail may go to; None: no mail for them."""
    email = str(getattr(user, "email", "") or "").strip()
    if not email or _HEADER_CONTROL.search(email) or "," in email:
        return None
    try:
        validate_email(email)
    except ValidationError:
        return None
    return email


def base_url() -> str:
    """Mail needs absolute links: SITE_URL, else the address `make run` serves."""
    base = site_base(None)
    if base:
        return base
    host = settings.HOST if ":" not in settings.HOST else f"[{settings.HOST}]"
    return f"http://{host}:{settings.PORT}/"


def absolute(url: str) -> str:
    if not url or urlsplit(url).scheme:
        return url
    return base_url().rstrip("/") + "/" + url.lstrip("/")


def mail_host() -> str:
    return urlsplit(base_url()).hostname or "localhost"


# --- unsubscribe tokens ---------------------------------------------------------------------------


def unsubscribe_token(user, *, subject: str = "", kind: str = "", digest: bool = False) -> str:
    """Signed, so only the mail's recipient can use it: mute `subject`, or turn `kind` (every
    digest kind, with digest=True) to the site only. No expiry: an old mail's link still works."""
    payload: dict[str, object] = {"u": user.pk}
    if subject:
        payload["s"] = subject
    elif kind:
        payload["k"] = kind
    else:
        payload["d"] = bool(digest)
    return signing.dumps(payload, salt=UNSUBSCRIBE_SALT, compress=True)


def read_token(token: str) -> dict | None:
    if not token or len(token) > 400:
        return None
    try:
        payload = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("u"), int):
        return None
    return payload


def unsubscribe_url(token: str) -> str:
    return absolute(reverse("notifications-unsubscribe", args=[token]))


# --- messages -------------------------------------------------------------------------------------


def _list_id(repo) -> str | None:
    """ "owner/name <name.owner.host>": mail filters sort by repository."""
    if repo is None:
        return None
    name = _LIST_LABEL.sub("-", repo.name).strip("-") or "repository"
    owner = _LIST_LABEL.sub("-", repo.owner.username).strip("-") or "owner"
    return f"{header_text(repo.full_name, 100)} <{name}.{owner}.{mail_host()}>"


def thread_root(subject: str) -> str | None:
    parsed = subjects.parse(subject)
    return f"<{parsed[0]}-{parsed[1]}@{mail_host()}>" if parsed else None


def subject_line(notification: Notification) -> str:
    """ "[owner/name] #12 Fix the parser" for a proposal; "[owner/name] <text>" otherwise (and
    for a subject its recipient may no longer see, whose text is selectors.REMOVED)."""
    info = subjects.resolve(notification.subject, notification.user) if notification.subject else None
    repo = info.repository if info is not None else notification.repository
    what = info.title if info is not None and info.title else notification.text
    return header_text(f"[{repo.full_name}] {what}" if repo is not None else what)


def notification_message(notification: Notification, to: str) -> EmailMultiAlternatives:
    user = notification.user
    # Rendered when sent: a subject moderated since it was queued is not described.
    notification = as_shown([notification], user)[0]
    if notification.subject:
        token = unsubscribe_token(user, subject=notification.subject)
    else:
        token = unsubscribe_token(user, kind=notification.kind)
    unsubscribe = unsubscribe_url(token)
    context = {
        "notification": notification,
        "link": absolute(notification.url),
        "unsubscribe_url": unsubscribe,
        "settings_url": absolute(reverse("notification-settings")),
        "muting_subject": bool(notification.subject),
    }
    headers = _list_headers(unsubscribe, notification.repository)
    headers["Message-ID"] = f"<notification-{notification.pk}@{mail_host()}>"
    headers["Date"] = formatdate(notification.created_at.timestamp(), usegmt=True)
    root = thread_root(notification.subject)
    if root:
        headers["In-Reply-To"] = root
        headers["References"] = root
    message = EmailMultiAlternatives(
        subject=subject_line(notification),
        body=render_to_string("notifications/email/notification.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
        headers=headers,
    )
    message.attach_alternative(
        render_to_string("notifications/email/notification.html", context), "text/html"
    )
    return message


def digest_message(user, rows: list[Notification], to: str) -> EmailMultiAlternatives:
    items = [(n, absolute(n.url)) for n in as_shown(rows, user)]
    context = {
        "user": user,
        "items": items,
        "unsubscribe_url": unsubscribe_url(unsubscribe_token(user, digest=True)),
        "settings_url": absolute(reverse("notification-settings")),
    }
    headers = _list_headers(context["unsubscribe_url"], None)
    first, last = rows[0].pk, rows[-1].pk
    headers["Message-ID"] = f"<digest-{user.pk}-{first}-{last}@{mail_host()}>"
    count = len(rows)
    message = EmailMultiAlternatives(
        subject=header_text(f"Your daily digest: {count} notification{'s' if count != 1 else ''}"),
        body=render_to_string("notifications/email/digest.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
        headers=headers,
    )
    message.attach_alternative(render_to_string("notifications/email/digest.html", context), "text/html")
    return message


def _list_headers(unsubscribe: str, repo) -> dict[str, str]:
    headers = {
        "List-Unsubscribe": f"<{unsubscribe}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        # RFC 3834: machines must not answer it (no vacation replies to the site).
        "Auto-Submitted": "auto-generated",
    }
    list_id = _list_id(repo)
    if list_id:
        headers["List-Id"] = list_id
    return headers
