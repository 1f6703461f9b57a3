"""The favicon and the API reference page, as served (their browser side: tests/test_browser_ui.py)."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

pytestmark = pytest.mark.django_db


def test_favicon_is_a_real_icon():
    response = Client().get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/vnd.microsoft.icon"
    assert response.content[:4] == b"\0\0\1\0"  # ICONDIR, type 1: an icon
    assert b"\x89PNG" in response.content and "max-age=86400" in response["Cache-Control"]
    assert Client().head("/favicon.ico").status_code == 200
    assert Client().post("/favicon.ico").status_code == 405
    page = Client().get("/").content.decode()
    assert '<link rel="icon" href="/favicon.ico"' in page and 'href="/static/img/favicon.svg"' in page


def test_api_reference_is_served_from_our_origin_with_the_strict_csp():
    response = Client().get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert all(a.startswith("/") for a in assets), assets  # no CDN, nothing from elsewhere
    assert "<script>" not in html and "<style" not in html and " style=" not in html  # nothing inline
    for asset in assets:
        if asset.startswith("/static/"):
            assert finders.find(asset.removeprefix("/static/")), asset
    assert 'data-schema-url="/api/v1/schema/"' in html
    csp = response["Content-Security-Policy"]
    assert "script-src 'self';" in csp and "style-src 'self';" in csp
    assert Client().get("/").content.decode().count('href="/api/v1/docs/"') == 1  # the footer's link
    assert Client().get("/api/v1/schema/").status_code == 200  # unchanged
