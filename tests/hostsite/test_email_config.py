"""EMAIL_URL and DEFAULT_FROM_EMAIL, parsed at start-up (hostsite.email_config)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from hostsite.email_config import CONSOLE_BACKEND, DUMMY_BACKEND, SMTP_BACKEND, email_config, from_address


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (None, (False, DUMMY_BACKEND, "localhost", 25, "", "", False, False)),
        ("", (False, DUMMY_BACKEND, "localhost", 25, "", "", False, False)),
        ("console://", (True, CONSOLE_BACKEND, "localhost", 25, "", "", False, False)),
        ("smtp://mail.example.org", (True, SMTP_BACKEND, "mail.example.org", 25, "", "", False, False)),
        ("smtp://127.0.0.1:2525/", (True, SMTP_BACKEND, "127.0.0.1", 2525, "", "", False, False)),
        (
            "smtp+tls://me%40example.org:p%3Ass%2Fw@mail.example.org",
            (True, SMTP_BACKEND, "mail.example.org", 587, "me@example.org", "p:ss/w", True, False),
        ),
        ("smtps://u:p@[::1]:4650", (True, SMTP_BACKEND, "::1", 4650, "u", "p", False, True)),
        ("smtps://mail.example.org", (True, SMTP_BACKEND, "mail.example.org", 465, "", "", False, True)),
    ],
)
def test_email_url_table(url, expected):
    c = email_config(url)
    assert (c.enabled, c.backend, c.host, c.port, c.user, c.password, c.use_tls, c.use_ssl) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://mail.example.org",
        "smtp://",
        "smtp://:25",
        "smtp://mail.example.org:99999",
        "smtp://mail.example.org:x",
        "smtp://mail.example.org/path",
        "smtp://mail.example.org?tls=1",
        "smtp://mail.example.org\r\n",
        "mail.example.org:25",
    ],
)
def test_bad_email_urls_stop_the_start_naming_the_variable(url):
    with pytest.raises(ImproperlyConfigured, match="EMAIL_URL"):
        email_config(url)


def test_from_address():
    assert from_address(None, "") == "hostsite <notifications@localhost>"
    assert from_address("", "https://git.example.org/sub/") == "hostsite <notifications@git.example.org>"
    assert from_address("Forge <forge@example.org>", "") == "Forge <forge@example.org>"
    assert from_address("forge@example.org", "") == "forge@example.org"
    for bad in ("not an address", "a@b.example\r\nBcc: x@y.example", "Forge <>"):
        with pytest.raises(ImproperlyConfigured, match="DEFAULT_FROM_EMAIL"):
            from_address(bad, "")
