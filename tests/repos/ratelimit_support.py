"""A web server of its own with low rate limits, and clients that come from an address of their
choosing: the server trusts loopback as its TLS proxy (TRUSTED_PROXIES), so X-Forwarded-For
names the client, as a proxy in front of it would."""

from __future__ import annotations

import contextlib
import http.cookies
import json
import random
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

from hostsite.ratelimit_settings import RATE_LIMIT_VARIABLES
from tests import live


@contextlib.contextmanager
def limited_web(live_env: dict[str, str], log_dir, **rates: str) -> Iterator[str]:
    """A gunicorn (two worker processes) with these rates, `group_name="count/period"`, and the
    suite's unreached rates for the rest. Yields its base URL."""
    env = {**live_env, "TRUSTED_PROXIES": "127.0.0.1/32"}
    for group, rate in rates.items():
        env[RATE_LIMIT_VARIABLES[group.replace("_", "-")][0]] = rate
    port = live.free_port()
    web = live.start_web(env, port, log_dir)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        web.stop()


def random_address() -> str:
    """An address no other test or run uses: counts are keyed by it, in a cache that outlives
    the run."""
    return f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"


@dataclass
class Answer:
    status: int
    body: str
    headers: dict[str, str]
    cookies: list[str]
    at: float

    def json(self):
        return json.loads(self.body)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def request(
    url: str, *, address: str, method: str = "GET", body: bytes | None = None, headers=None
) -> Answer:
    """One request from `address`, redirects not followed."""
    headers = {"X-Forwarded-For": address, **(headers or {})}
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with _OPENER.open(req, timeout=60) as resp:
            status, data, message = resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as exc:
        status, data, message = exc.code, exc.read(), exc.headers
    text = data.decode(errors="replace")  # an archive is bytes; the rest is text
    return Answer(status, text, dict(message), message.get_all("Set-Cookie") or [], time.monotonic())


class SignInForm:
    """The sign-in form as a browser posts it: the CSRF cookie from the page, its token in the body."""

    def __init__(self, base: str):
        page = request(base + "/login", address=random_address())
        cookie = http.cookies.SimpleCookie(page.cookies[0])
        self.csrf = cookie["csrftoken"].value
        assert re.search(r'name="csrfmiddlewaretoken"', page.body)
        self.base = base

    def post(self, username: str, password: str, *, address: str) -> Answer:
        body = urllib.parse.urlencode(
            {"username": username, "password": password, "csrfmiddlewaretoken": self.csrf}
        ).encode()
        return request(
            self.base + "/login",
            address=address,
            method="POST",
            body=body,
            headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={self.csrf}"},
        )


def signed_in(answer: Answer) -> bool:
    """Django's LoginView redirects on success, and answers the form again (200) on failure."""
    return answer.status == 302 and any(cookie.startswith("sessionid=") for cookie in answer.cookies)


def window_turned(started: float, first_refusal: Answer, period: int) -> bool:
    """Whether the limit's fixed window began after `started` (monotonic), judged from the first
    429's Retry-After: then up to twice the count was allowed across the turn, rightly. Windows
    are a day long in these tests, so this is rare; tests that count exactly skip then."""
    window_start = first_refusal.at + int(first_refusal.headers["Retry-After"]) - period
    return window_start > started - 1
