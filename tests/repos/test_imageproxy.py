"""The image proxy (render.imageproxy and repos.imagefetch, /_img/...) against a real HTTP server on loopback.

The guard refuses loopback in production; these tests let only 127.0.0.1/32 through
(IMAGE_PROXY_ALLOW_NETWORKS), so a redirect to 127.0.0.2 or 10.0.0.1 is still refused."""

from __future__ import annotations

import time
import uuid

import pytest
from django.test import Client

from render import imageproxy, rendering
from repos import imagefetch
from tests.repos.imagehost import image_host, png

pytestmark = pytest.mark.django_db


@pytest.fixture
def host(settings):
    settings.IMAGE_PROXY_ALLOW_NETWORKS = ["127.0.0.1/32"]
    settings.IMAGE_PROXY_TIMEOUT = 2
    with image_host() as server:
        yield server


def unique(host, path: str) -> str:
    """A URL never asked for before, so no earlier test's cached answer is found."""
    return host(f"/{uuid.uuid4().hex}{path}")


def proxied(url: str, **headers):
    return Client().get(imageproxy.proxy_url(url), **headers)


def test_a_png_is_served_with_strict_headers_and_nothing_of_the_client_forwarded(host):
    url = unique(host, "/good.png")
    response = proxied(url, HTTP_COOKIE="sessionid=secret", HTTP_REFERER="http://site/private/page")
    assert response.status_code == 200
    assert response.content == png()
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "default-src 'none'" in response["Content-Security-Policy"]
    assert "sandbox" in response["Content-Security-Policy"]
    assert response["Cache-Control"].startswith("public, max-age=")
    [request] = host.seen
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert "cookie" not in headers and "referer" not in headers
    assert headers["user-agent"] == imagefetch.USER_AGENT


def test_a_url_beyond_ascii_is_sent_percent_encoded(host):
    url = unique(host, "/bücher/good.png?q=ü")
    assert proxied(url).content == png()
    assert host.seen[0]["path"].endswith("/b%C3%BCcher/good.png?q=%C3%BC")


def test_good_images_are_cached(host):
    url = unique(host, "/good.png")
    assert proxied(url).status_code == 200
    assert proxied(url).content == png()
    assert len(host.seen) == 1


def test_svg_is_served_inert(host):
    response = proxied(unique(host, "/badge.svg"))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert "sandbox" in response["Content-Security-Policy"]
    assert "script-src" not in response["Content-Security-Policy"]  # default-src 'none' covers it


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/page.html", "Not an image"),
        ("/fake.png", "not what its type says"),
        ("/big.png", "too large"),
        ("/big-unsized.png", "too large"),
        ("/short.png", "could not be fetched"),
        ("/gzip.png", "encoded"),
        ("/missing.png", "HTTP 404"),
        ("/loop", "redirects too many times"),
        ("/to-broken", "Not a valid image URL"),
    ],
)
def test_what_is_not_a_sound_image_is_a_502_with_a_reason(host, path, reason):
    response = proxied(unique(host, path))
    assert response.status_code == 502
    assert response["Content-Type"].startswith("text/plain")
    assert reason in response.content.decode()


def test_a_lying_content_length_cannot_bring_more_than_it_claimed(host):
    response = proxied(unique(host, "/big-lying.png"))
    assert response.status_code == 200
    assert len(response.content) == len(png()) + 100


@pytest.mark.parametrize("path", ["/slow.png", "/slow-headers.png"])
def test_a_slow_host_is_cut_at_the_time_cap(host, settings, path):
    settings.IMAGE_PROXY_TIMEOUT = 1
    started = time.monotonic()
    response = proxied(unique(host, path))
    assert response.status_code == 502
    assert "too long" in response.content.decode()
    assert time.monotonic() - started < 5  # the host drips for 10 s


def test_redirects_are_followed_and_each_hop_is_checked(host):
    assert proxied(unique(host, "/to-good")).content == png()
    for path in ("/to-private", "/to-loopback"):
        response = proxied(unique(host, path))
        assert response.status_code == 404, path
        assert "public addresses" in response.content.decode()
    assert proxied(unique(host, "/to-file")).status_code == 404


def test_loopback_is_refused_without_the_allow_list(host, settings):
    settings.IMAGE_PROXY_ALLOW_NETWORKS = []
    response = proxied(unique(host, "/good.png"))
    assert response.status_code == 404
    assert host.seen == []


def test_a_bad_signature_or_encoding_is_a_404_and_fetches_nothing(host):
    url = unique(host, "/good.png")
    good = imageproxy.proxy_url(url)
    _, _, signature, encoded = good.split("/")
    forged = "0" * len(signature)
    for path in (f"/_img/{forged}/{encoded}", f"/_img/{signature}/{encoded}00", f"/_img/{signature}/zz"):
        response = Client().get(path)
        assert response.status_code == 404
        assert response["X-Content-Type-Options"] == "nosniff"
    assert host.seen == []


@pytest.mark.parametrize(
    "url", ["data:image/png;base64,iVBORw0KGgo=", "file:///etc/passwd", "ftp://example.com/a.png"]
)
def test_other_schemes_are_never_proxied_nor_fetched(url):
    assert imageproxy.rewrite_src(url) is None
    # Even signed (a URL we would never sign), the fetcher refuses them.
    response = proxied(url)
    assert response.status_code == 404
    assert "http and https" in response.content.decode()


def test_the_proxy_can_be_switched_off(host, settings):
    url = unique(host, "/good.png")
    path = imageproxy.proxy_url(url)
    settings.IMAGE_PROXY_ENABLED = False
    assert imageproxy.rewrite_src(url) is None
    assert Client().get(path).status_code == 404
    assert host.seen == []


def test_rendered_markdown_points_external_images_at_the_proxy(host):
    url = unique(host, "/good.png")
    html = rendering.render_markdown(
        f"![badge]({url}) ![rel](logo.png) ![proto](//example.com/a.png)",
        directory="docs",
        blob_base="/o/r/blob/main",
        raw_base="/o/r/raw/main",
    )
    assert url not in html and "example.com" not in html
    assert 'src="/o/r/raw/main/docs/logo.png"' in html
    sources = [part.split('"')[0] for part in html.split('src="')[1:]]
    assert sum(s.startswith("/_img/") for s in sources) == 2
    assert imageproxy.verified_url(*sources[0].split("/")[2:4]) == url
    assert imageproxy.verified_url(*sources[2].split("/")[2:4]) == "https://example.com/a.png"
    assert Client().get(sources[0]).content == png()
