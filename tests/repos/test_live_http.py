"""The same flows over real HTTP against the real web server (gunicorn), as a script would."""

import http.cookiejar
import json
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from repos.models import Repository

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
PASSWORD = "long-enough-passphrase-42"


class Browser:
    """A cookie-keeping HTTP client that sends Django's CSRF token like a form would."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def request(self, method, path, data=None, headers=None):
        body = None
        headers = dict(headers or {})
        if isinstance(data, dict):
            csrf = next((c.value for c in self.jar if c.name == "csrftoken"), "")
            body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": csrf}).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
            headers.setdefault("Referer", self.base + path)
        elif isinstance(data, bytes | str):
            body = data.encode() if isinstance(data, str) else data
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)
        try:
            with self.opener.open(req, timeout=30) as resp:
                return resp.status, resp.read().decode(), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(), dict(exc.headers)


def test_signup_token_api_and_repository_page_over_http(live_server_url):
    web = Browser(live_server_url)
    status, page, _ = web.request("GET", "/signup")
    assert status == 200 and "csrfmiddlewaretoken" in page
    status, page, _ = web.request(
        "POST", "/signup", {"username": "zoe", "email": "", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert status == 200 and "Welcome, zoe." in page  # followed the redirect, signed in

    status, page, _ = web.request("POST", "/settings/tokens", {"name": "cli", "scope": "write"})
    secret = re.search(r'value="(hst_[A-Za-z0-9_-]{40})"', page)[1]

    api = Browser(live_server_url)
    auth = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    status, body, _ = api.request("POST", "/api/v1/repos", json.dumps({"name": "from-api"}), auth)
    assert status == 201, body
    assert json.loads(body)["clone_url"] == f"{live_server_url}/zoe/from-api.git"
    assert Repository.objects.filter(name="from-api", owner__username="zoe").exists()

    status, page, _ = web.request("GET", "/zoe/from-api")
    assert status == 200 and f"{live_server_url}/zoe/from-api.git" in page

    # Private: a 404 to anonymous visitors, over the API and the pages alike.
    status, body, _ = api.request(
        "PATCH", "/api/v1/repos/zoe/from-api", json.dumps({"visibility": "private"}), auth
    )
    assert status == 200, body
    anonymous = Browser(live_server_url)
    assert anonymous.request("GET", "/zoe/from-api")[0] == 404
    status, body, _ = anonymous.request("GET", "/api/v1/repos/zoe/from-api")
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"


def test_forms_without_csrf_token_are_refused(live_server_url):
    req = urllib.request.Request(
        live_server_url + "/signup",
        data=b"username=eve&password1=x&password2=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=10)
    assert info.value.code == 403


def test_static_assets_are_served_by_the_app(live_server_url):
    with urllib.request.urlopen(live_server_url + "/", timeout=10) as resp:
        page = resp.read().decode()
        assert resp.headers["X-Frame-Options"] == "DENY"
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
    css = re.search(r'href="(/static/[^"]+\.css)"', page)[1]
    with urllib.request.urlopen(live_server_url + css, timeout=10) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/css")
        assert b"prefers-color-scheme: dark" in resp.read()
    assert "//cdn" not in page and "https://" not in page  # nothing from external hosts
