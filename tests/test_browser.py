"""The real web UI in headless Chromium (Debian's chromium, chromium-driver) driven by Selenium
against the real gunicorn server; the tests assert on what a person sees."""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from repos.models import Repository
from tests.factories import RepositoryFactory, UserFactory

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium missing: see requirements-dev.txt")
from selenium.common.exceptions import NoAlertPresentException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-dev-shm-usage",
]
SHOTS = Path("/tmp/hostsite-shots")
PASSWORD = "plinth-orbit-73-quarry"
XSS = "<img src=x onerror=alert(1)><script>window.pwned=1</script>"


@pytest.fixture
def browser(tmp_path):
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        reason = f"{' and '.join(missing)} missing: install the Debian packages chromium and chromium-driver"
        if os.environ.get("HOSTSITE_BROWSER_REQUIRED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)  # with Service's path below, Selenium Manager never runs
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1280,800"]:
        options.add_argument(flag)
    options.unhandled_prompt_behavior = "ignore"  # an alert stays open for assert_no_alert to see
    service = webdriver.ChromeService(executable_path=str(CHROMEDRIVER))
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()


class Page:
    """The browser plus the server's address, with the few moves the tests repeat."""

    def __init__(self, driver, base: str):
        self.driver, self.base = driver, base
        self.get = lambda path: driver.get(base + path)
        self.css = lambda selector: driver.find_elements(By.CSS_SELECTOR, selector)
        self.text = lambda selector="body": driver.find_element(By.CSS_SELECTOR, selector).text

    def submit(self, **fields: str) -> None:
        """Fill the form holding the first field (radios by value) and press its submit button."""
        form = None
        for name, value in fields.items():
            radios = self.css(f'input[type=radio][name="{name}"][value="{value}"]')
            element = radios[0] if radios else self.driver.find_element(By.NAME, name)
            if radios:
                element.click()
            else:
                element.clear()
                element.send_keys(value)
            form = form or element.find_element(By.XPATH, "./ancestor::form")
        self.click_and_wait(form.find_element(By.CSS_SELECTOR, "button[type=submit]"))

    def click_and_wait(self, button) -> None:
        """Click a submit button and wait until the next page has loaded (a new page has no mark)."""
        self.driver.execute_script("window.beforeClick = true")
        button.click()
        loaded = "return !window.beforeClick && document.readyState === 'complete'"
        WebDriverWait(self.driver, 20, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script(loaded)
        )

    def sign_in(self, username: str) -> None:
        self.get("/login")
        self.submit(username=username, password=PASSWORD)
        assert self.signed_in_as() == username, self.text()

    def signed_in_as(self) -> str | None:
        if not self.css("header button.linkbutton"):
            return None
        links = self.css("header .navlinks a.navuser")
        return links[0].text if links else ""

    def assert_no_alert(self) -> None:
        try:
            alert = self.driver.switch_to.alert
        except NoAlertPresentException:
            return
        pytest.fail(f"the page opened an alert: {alert.text!r}")


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
    secret = page.css("input.secret")[0].get_attribute("value")
    assert secret.startswith("hst_"), secret
    row = page.text("table.table tbody tr")
    assert "laptop" in row and "write" in row and "never" in row
    assert api_user(page.base, secret) == "carol"  # the secret shown is the real token

    page.driver.refresh()  # a GET after the post/redirect/get: the secret is gone for good
    assert page.css("input.secret") == []
    assert secret not in page.driver.page_source
    assert "laptop" in page.text("table.table tbody tr")

    page.click_and_wait(page.css("table.table tbody tr button")[0])
    assert "Token 'laptop' revoked." in page.text(".messages")
    row = page.css("table.table tbody tr")[0]
    assert "revoked" in row.text and "revoked" in row.get_attribute("class")
    assert row.find_elements(By.TAG_NAME, "button") == []
    assert api_user(page.base, secret) == 401


def test_new_repository_form_and_invalid_names(page):
    user = UserFactory(username="dave", password=PASSWORD)
    page.sign_in("dave")
    page.get("/new")
    page.submit(name="hello-world", description="First one", visibility="private", default_branch="trunk")
    assert page.driver.current_url == f"{page.base}/dave/hello-world", page.text("main")
    assert "Created dave/hello-world." in page.text(".messages")
    assert page.css("#clone-url")[0].get_attribute("value").endswith("/dave/hello-world.git")
    assert "private" in page.text("h1.repo-title")
    empty = page.text("main section.card")
    assert "This repository is empty" in empty and "git push -u origin trunk" in empty

    for bad in ("../etc", "api", "x.git", ""):
        page.get("/new")
        page.submit(name=bad)
        assert page.driver.current_url == f"{page.base}/new", bad
        errors = page.css(".field.has-error .error")
        assert errors and errors[0].text.strip(), f"no error shown for {bad!r}"
        assert page.css("input[name=name]")[0].get_attribute("value") == bad  # what was typed is kept
    assert list(Repository.objects.values_list("owner__username", "name")) == [("dave", "hello-world")]
    assert Repository.objects.get(owner=user).default_branch == "trunk"


def test_user_text_is_rendered_as_text_not_html(page):
    mallory = UserFactory(username="mallory", display_name=XSS, bio=f"line one\n{XSS}")
    RepositoryFactory(owner=mallory, name="xss", description=XSS)
    # The profile shows the display name, the bio and the repository's description.
    for path, times in {"/mallory/xss": 1, "/": 1, "/mallory": 3}.items():
        page.get(path)
        page.assert_no_alert()
        assert page.driver.execute_script("return window.pwned") is None, path
        assert page.css("main img") == [] and page.css("main script") == [], path
        assert page.text("main").count(XSS) == times, (path, page.text("main"))
        page.assert_no_alert()  # late onerror handlers too


def assert_not_found(page, path: str) -> None:
    page.get(path)
    assert "not found" in page.driver.title.lower(), (path, page.driver.title)  # Django's page or a 404.html
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
    assert page.driver.title.startswith("alice/trove")
    assert page.css("#clone-url")[0].get_attribute("value").endswith("/alice/trove.git")


def body_background(page) -> tuple[int, ...]:
    colour = page.driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    return tuple(int(part) for part in colour[colour.index("(") + 1 : -1].split(","))


def shoot(page, tmp_path, path: str, width: int, height: int, scheme: str) -> str:
    """Show `path` at a viewport size and colour scheme, save a screenshot; returns an overflow report."""
    driver = page.driver
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 800}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    media = {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", media)
    page.get(path)
    assert driver.execute_script(f"return matchMedia('(prefers-color-scheme: {scheme})').matches")
    shot = tmp_path / f"{path.strip('/').replace('/', '_') or 'home'}-{width}x{height}-{scheme}.png"
    assert driver.save_screenshot(str(shot))
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, SHOTS / shot.name)
    # A phone zooms out to fit wide content, so innerWidth grows too: compare both with the viewport.
    inner, scroll = driver.execute_script("return [innerWidth, document.documentElement.scrollWidth]")
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
