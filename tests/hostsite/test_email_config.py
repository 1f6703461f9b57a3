"""EMAIL_URL and DEFAULT_FROM_EMAIL, parsed at start-up (hostsite.email_config)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from hostsite.email_config import CONSOLE_BACKEND, DUMMY_BACKEND, SMTP_BACKEND, email_config, from_address

BASE_DIR = Path(__file__).resolve().parents[2]


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


EMAIL_PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.EMAIL_ENABLED, s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_USE_TLS, "
    "s.DEFAULT_FROM_EMAIL, sorted(s.CELERY_BEAT_SCHEDULE)]))"
)


def _settings(tmp_path, **env):
    clean = {k: v for k, v in os.environ.items() if k not in ("EMAIL_URL", "DEFAULT_FROM_EMAIL", "SITE_URL")}
    clean.update(
        DJANGO_SETTINGS_MODULE="hostsite.settings", VAR_DIR=str(tmp_path / "var"), SECRET_KEY="k" * 50
    )
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-c", EMAIL_PROBE],
        env=clean,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_settings_read_email_url_and_schedule_the_digest(tmp_path):
    off = _settings(tmp_path)
    assert off.returncode == 0, off.stderr
    enabled, backend, *_rest, beat = json.loads(off.stdout)
    assert (enabled, backend) == (False, DUMMY_BACKEND) and "send-notification-digests" in beat
    on = _settings(tmp_path, EMAIL_URL="smtp+tls://mail.example.org", SITE_URL="https://git.example.org")
    assert on.returncode == 0, on.stderr
    assert json.loads(on.stdout)[:6] == [
        True,
        SMTP_BACKEND,
        "mail.example.org",
        587,
        True,
        "hostsite <notifications@git.example.org>",
    ]
    bad = _settings(tmp_path, EMAIL_URL="ftp://mail.example.org")
    assert bad.returncode != 0 and "EMAIL_URL" in bad.stderr.splitlines()[-1]


def test_make_run_prints_mail_unless_told_otherwise(tmp_path, monkeypatch):
    from hostsite import run

    monkeypatch.setenv("VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("SECRET_KEY", "k" * 50)
    monkeypatch.delenv("EMAIL_URL", raising=False)
    assert run._environment()["EMAIL_URL"] == "console://"
    monkeypatch.setenv("EMAIL_URL", "smtp://mail.example.org")
    assert run._environment()["EMAIL_URL"] == "smtp://mail.example.org"
