"""The real web UI in headless Chromium (Debian's chromium) driven by Playwright against the
real gunicorn server; the tests assert on what a person sees."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request

import pytest

from repos.models import Repository
from tests.browser import SHOTS, chromium_page
from tests.factories import RepositoryFactory, UserFactory

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

PASSWORD = "plinth-orbit-73-quarry"
XSS = "<img src=x onerror=alert(1)><script>window.pwned=1</script>"


@pytest.fixture
def browser(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=800) as page:
        yield page


class Page:
    """The browser plus the server's address, with the few moves the tests repeat."""

    def __init__(self, browser, base: str):
        self.browser, self.base = browser, base

    def get(self, path: str) -> None:
        self.browser.goto(self.base + path)

    def css(self, selector: str) -> list:
        return self.browser.locator(selector).all()

    def text(self, selector: str = "body") -> str:
        return self.browser.locator(selector).first.inner_text()

    def submit(self, **fields: str) -> None:
        """Fill the form holding the first field (radios by value) and press its submit button."""
        form = None
        for name, value in fields.items():
            radios = self.css(f'input[type=radio][name="{name}"][value="{value}"]')
            element = radios[0] if radios else self.browser.locator(f'[name="{name}"]').first
            if radios:
                element.check()
            else:
                element.fill(value)
            form = form or element.locator("xpath=ancestor::form")
        self.click_and_wait(form.locator("button[type=submit]").first)

    def click_and_wait(self, button) -> None:
        """Click a submit button and wait until the next page has loaded."""
        with self.browser.expect_navigation(wait_until="load", timeout=20_000):
            button.click()

    def sign_in(self, username: str) -> None:
        self.get("/login")
        self.submit(username=username, password=PASSWORD)
        assert self.signed_in_as() == username, self.text()

    def signed_in_as(self) -> str | None:
        if not self.css("header button.linkbutton"):
            return None
        links = self.css("header .navlinks a.navuser")
        return links[0].inner_text() if links else ""

    def assert_no_alert(self) -> None:
        # chromium_page dismisses every dialog and keeps its message.
        assert self.browser.dialogs == [], f"the page opened an alert: {self.browser.dialogs!r}"


@pytest.fixture
def page(browser, live_server_url):
    return Page(browser, live_server_url)


def api_user(base: str, secret: str) -> int | str:
    """The API's answer to a token: the username it belongs to, or the HTTP error status."""
    headers = {"Authorization": f"Bearer {secret}"}
    request = urllib.request.Request(base + "/api/v1/user", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)["username"]
    except urllib.error.HTTPError as exc:
        return exc.code


def test_signup_then_token_is_shown_once_and_can_be_revoked(page):
    page.get("/signup")
    page.submit(username="carol", email="carol@example.invalid", password1=PASSWORD, password2=PASSWORD)
    assert page.signed_in_as() == "carol", page.text()
    assert "Welcome, carol." in page.text(".messages")
    assert "Your repositories" in page.text("main")

    page.get("/settings/tokens")
    page.submit(name="laptop", scope="write")
    secret = page.css("input.secret")[0].input_value()
    assert secret.startswith("hst_"), secret
    row = page.text("table.table tbody tr")
    assert "laptop" in row and "write" in row and "never" in row
    assert api_user(page.base, secret) == "carol"  # the secret shown is the real token

    page.browser.reload()  # a GET after the post/redirect/get: the secret is gone for good
    assert page.css("input.secret") == []
    assert secret not in page.browser.content()
    assert "laptop" in page.text("table.table tbody tr")

    page.click_and_wait(page.css("table.table tbody tr button")[0])
    assert "Token 'laptop' revoked." in page.text(".messages")
    row = page.css("table.table tbody tr")[0]
    assert "revoked" in row.inner_text() and "revoked" in row.get_attribute("class")
    assert row.locator("button").count() == 0
    assert api_user(page.base, secret) == 401


def test_new_repository_form_and_invalid_names(page):
    user = UserFactory(username="dave", password=PASSWORD)
    page.sign_in("dave")
    page.get("/new")
    page.submit(name="hello-world", description="First one", visibility="private", default_branch="trunk")
    assert page.browser.url == f"{page.base}/dave/hello-world", page.text("main")
    assert "Created dave/hello-world." in page.text(".messages")
    assert page.css("#clone-url")[0].input_value().endswith("/dave/hello-world.git")
    assert "private" in page.text("h1.repo-title")
    empty = page.text("main section.card")
    assert "This repository is empty" in empty and "git push -u origin trunk" in empty

    for bad in ("../etc", "api", "x.git", ""):
        page.get("/new")
        page.submit(name=bad)
        assert page.browser.url == f"{page.base}/new", bad
        errors = page.css(".field.has-error .error")
        assert errors and errors[0].inner_text().strip(), f"no error shown for {bad!r}"
        assert page.css("input[name=name]")[0].input_value() == bad  # what was typed is kept
    assert list(Repository.objects.values_list("owner__username", "name")) == [("dave", "hello-world")]
    assert Repository.objects.get(owner=user).default_branch == "trunk"


def test_user_text_is_rendered_as_text_not_html(page):
    mallory = UserFactory(username="mallory", display_name=XSS, bio=f"line one\n{XSS}")
    RepositoryFactory(owner=mallory, name="xss", description=XSS)
    # The profile shows the display name, the bio and the repository's description.
    for path, times in {"/mallory/xss": 1, "/": 1, "/mallory": 3}.items():
        page.get(path)
        page.assert_no_alert()
        assert page.browser.evaluate("window.pwned") is None, path
        assert page.css("main img") == [] and page.css("main script") == [], path
        assert page.text("main").count(XSS) == times, (path, page.text("main"))
        page.assert_no_alert()  # late onerror handlers too


def assert_not_found(page, path: str) -> None:
    page.get(path)
    assert "not found" in page.browser.title().lower(), (
        path,
        page.browser.title(),
    )  # Django's page or a 404.html
    assert "not found" in page.text().lower() and "trove" not in page.text()
    assert page.css("#clone-url") == []


def test_private_repository_is_404_for_everyone_else(page):
    UserFactory(username="bob", password=PASSWORD)
    alice = UserFactory(username="alice", password=PASSWORD)
    RepositoryFactory(owner=alice, name="trove", visibility="private")

    page.get("/")
    assert page.signed_in_as() is None
    for path in ("/alice/trove", "/alice/trove.git", "/Alice/trove/"):
        assert_not_found(page, path)
    page.get("/alice")
    assert "trove" not in page.text("main")

    page.sign_in("bob")
    for path in ("/alice/trove", "/ALICE/Trove", "/alice/trove/settings"):
        assert_not_found(page, path)
    page.get("/")
    assert "trove" not in page.text("main")

    page.click_and_wait(page.css("header button.linkbutton")[0])  # Sign out, then the owner does see it
    assert page.signed_in_as() is None
    page.sign_in("alice")
    page.get("/alice/trove")
    assert page.browser.title().startswith("alice/trove")
    assert page.css("#clone-url")[0].input_value().endswith("/alice/trove.git")


def body_background(page) -> tuple[int, ...]:
    colour = page.browser.evaluate("getComputedStyle(document.body).backgroundColor")
    return tuple(int(part) for part in colour[colour.index("(") + 1 : -1].split(","))


def shoot(page, tmp_path, path: str, width: int, height: int, scheme: str) -> str:
    """Show `path` at a viewport size and colour scheme, save a screenshot; returns an overflow report."""
    browser = page.browser
    browser.set_viewport_size({"width": width, "height": height})
    # Chromium's own device emulation on top: "mobile" makes the page honour its meta viewport,
    # as a phone does. Playwright's screenshot puts its own (non-mobile) metrics back, so the
    # page is measured before it is shot.
    cdp = browser.context.new_cdp_session(browser)
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 800}
    cdp.send("Emulation.setDeviceMetricsOverride", metrics)
    browser.emulate_media(color_scheme=scheme)
    page.get(path)
    assert browser.evaluate(f"matchMedia('(prefers-color-scheme: {scheme})').matches")
    # A phone zooms out to fit wide content, so innerWidth grows too: compare both with the viewport.
    inner, scroll = browser.evaluate("[innerWidth, document.documentElement.scrollWidth]")
    shot = tmp_path / f"{path.strip('/').replace('/', '_') or 'home'}-{width}x{height}-{scheme}.png"
    browser.screenshot(path=str(shot))
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, SHOTS / shot.name)
    return "" if scroll <= inner == width else f"{path} at {width}px ({scheme}): {scroll}px wide, see {shot}"


def test_home_in_light_and_dark_at_desktop_and_phone_widths(page, tmp_path):
    owner = UserFactory(username="erin")
    RepositoryFactory(owner=owner, name="dotfiles", description="Configuration for zsh, git and tmux.")
    RepositoryFactory(owner=owner, name="tiny-http-server", description="A small HTTP server, for learning.")
    for width, height in ((1280, 800), (390, 844)):
        backgrounds = {}
        for scheme in ("light", "dark"):
            for path in ("/", "/erin/dotfiles"):
                overflow = shoot(page, tmp_path, path, width, height, scheme)
                assert not overflow, f"the page scrolls sideways: {overflow}"
                if path == "/":
                    backgrounds[scheme] = body_background(page)
                    assert "erin/dotfiles" in page.text(".repo-list")
        assert backgrounds["light"] != backgrounds["dark"], backgrounds
        assert sum(backgrounds["dark"][:3]) < sum(backgrounds["light"][:3]), backgrounds


def test_long_content_and_token_table_fit_a_phone(page, tmp_path):
    owner = UserFactory(username="frank", password=PASSWORD)
    url = "https://example.invalid/a/long/unbroken/address/that/must/wrap/on/phones"
    RepositoryFactory(owner=owner, name="a-rather-long-repository-name-for-phones", description=url)
    page.sign_in("frank")
    page.get("/settings/tokens")
    page.submit(name="laptop at home", scope="read")
    paths = ["/", "/frank", "/frank/a-rather-long-repository-name-for-phones", "/settings/tokens"]
    overflows = [shoot(page, tmp_path, path, 390, 844, "light") for path in paths]
    assert not any(overflows), "\n".join(filter(None, overflows))
