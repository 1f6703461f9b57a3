"""The site's look in headless Chromium against the real server: pages fit phone widths with
no sideways scroll, text meets WCAG AA contrast in light and dark schemes, icons are SVG, the
Pushlog page filters, and the API reference renders under our CSP."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from gitcore.git import run_git
from gitcore.gittools import ZERO_OID, rev_parse
from repos import pushes
from tests.browser import chromium_page, shot
from tests.factories import UserFactory
from tests.repos.histories import Work

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

PASSWORD = "plinth-orbit-73-quarry"
OWNER = "a-contributor-with-a-long-name"
NAME = "a-repository-name-long-enough-to-stretch-every-clone-url"
BRANCH = "feature/a-very-long-branch-name-that-goes-on-and-on-without-any-place-to-break-it"
LONG_LINE = "x = " + "+".join(f"value_{i}" for i in range(60))
README = (
    "# Wide things\n\n"
    + "| "
    + " | ".join(f"column-{i}-with-a-long-heading" for i in range(8))
    + " |\n|"
    + "---|" * 8
    + "\n| "
    + " | ".join(f"cell-{i}-holding-unbreakable-text" for i in range(8))
    + " |\n\n```python\n"
    + LONG_LINE
    + "\n```\n\nA link: https://example.invalid/"
    + "a" * 120
    + "\n"
)


@pytest.fixture
def scene(tmp_path, git_home):
    """A public repository with a long clone URL, long branch and workspace names, a README with
    a wide table and a long code line, pushes (one to a workspace) and a proposal."""
    from reviews.services import proposal_open

    work = Work(tmp_path / "work", git_home)
    work.commit("first", {"README.md": README, "src/long.py": LONG_LINE + "\n", "docs/a.txt": "a\n"})
    # A symlink and a submodule beside the file, for the tree's icons.
    os.symlink("long.py", work.path / "src" / "link.py")
    sub = work.git("rev-parse", "HEAD")
    work.git("add", "src/link.py")
    work.git("update-index", "--add", "--cacheinfo", f"160000,{sub},src/vendored")
    work.commit("a link and a submodule")
    work.git("checkout", "--quiet", "-b", BRANCH)
    work.commit("work on a long branch " + "y" * 150, {"src/long.py": LONG_LINE + " + 1\n"})
    work.git("checkout", "--quiet", "main")
    repo = work.publish(owner=OWNER, name=NAME)
    contributor = UserFactory(username="contributor-with-a-rather-long-name")
    ref = "refs/users/contributor-with-a-rather-long-name/" + BRANCH
    base = datetime.now(tz=UTC) - timedelta(days=3)
    for day, (user, target, src) in enumerate(
        [
            (repo.owner, f"refs/heads/{BRANCH}", BRANCH),
            (contributor, ref, BRANCH),
            (repo.owner, "refs/tags/v1.0", "main"),
        ]
    ):
        old = rev_parse(repo.disk_path, target) or ZERO_OID
        run_git(["fetch", "--quiet", str(work.path), f"+refs/heads/{src}:{target}"], repo=repo.disk_path)
        new = rev_parse(repo.disk_path, target)
        pushes.push_record(
            repo=repo,
            pusher=user,
            updates=[pushes.Update(old, new, target)],
            created_at=base + timedelta(days=day),
        )
    proposal_open(repo=repo, user=contributor, source_ref=ref, target_branch="main", title="Long " * 30)
    head = rev_parse(repo.disk_path, f"refs/heads/{BRANCH}")
    from bundles.models import Bundle, BundleBuild

    now = datetime.now(tz=UTC)
    for token, kind in ((1, "base"), (2, "incremental")):
        for flavor in ("standard", "zstd"):
            Bundle.objects.create(
                repository=repo,
                kind=kind,
                flavor=flavor,
                creation_token=1764000000 + token,
                size=123456789,
                commit_count=123456,
                state="published",
                published_at=now,
            )
    BundleBuild.objects.create(
        repository=repo,
        state="failed",
        finished_at=now,
        progress="Writing objects: 100% (123456/123456)",
        error="fatal: " + "z" * 300,
    )
    BundleBuild.objects.create(
        repository=repo, state="succeeded", finished_at=now, progress="published base and incremental"
    )
    from sshgit.services import add_deploy_key, add_user_key
    from tests.sshgit.keygen import ed25519_line

    # Keys with long titles, so the key tables render (the owner then gets SSH clone URLs first).
    add_user_key(repo.owner, title="a-laptop-key-" + "k" * 80, text=ed25519_line())
    add_deploy_key(
        repo, acting_user=repo.owner, title="deploy-" + "d" * 80, text=ed25519_line(), read_write=True
    )
    repo.owner.set_password(PASSWORD)
    repo.owner.save()
    return {"repo": repo, "head": head, "contributor": contributor}


def page_paths(scene) -> list[str]:
    r = f"/{OWNER}/{NAME}"
    return [
        r,
        f"{r}/tree/main/src",
        f"{r}/blob/main/src/long.py",
        f"{r}/commit/{scene['head']}",
        f"{r}/commits/{BRANCH}",
        f"{r}/bundles",
        f"{r}/work",
        f"{r}/workspaces",
        f"{r}/proposals",
        f"{r}/pushlog?workspaces=1",
        "/",
        "/login",
        "/signup",
        "/settings/keys",
        "/help/ssh",
        f"{r}/settings/keys",
    ]


def sign_in(page, base: str) -> None:
    page.goto(base + "/login")
    page.fill("[name=username]", OWNER)
    page.fill("[name=password]", PASSWORD)
    with page.expect_navigation():
        page.click("main form button[type=submit]")
    assert page.locator("header .navuser").inner_text() == OWNER


def test_pages_fit_phone_widths(scene, monkeypatch, live_server_url):
    failures = []
    for width in (360, 390):
        with chromium_page(monkeypatch, width=width, height=800) as page:
            # As a phone: Chromium honours the meta viewport and would zoom out to fit a wide
            # page (innerWidth grows), so innerWidth is checked against the device width too.
            metrics = {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": True}
            page.context.new_cdp_session(page).send("Emulation.setDeviceMetricsOverride", metrics)
            for who in ("anonymous", "owner"):
                if who == "owner":
                    sign_in(page, live_server_url)
                for path in page_paths(scene):
                    page.goto(live_server_url + path)
                    inner, scroll = page.evaluate("[innerWidth, document.documentElement.scrollWidth]")
                    if not scroll <= inner == width:
                        name = f"{width}-{who}-{path.strip('/').replace('/', '_')[-60:] or 'home'}.png"
                        shot(page, name)
                        failures.append(
                            f"{path} at {width}px ({who}): {scroll}px wide (innerWidth {inner}), {name}"
                        )
    assert not failures, "pages scroll sideways:\n" + "\n".join(failures)


# WCAG 2.x contrast of every visible text element against the colour painted behind it (its
# own and its ancestors' backgrounds, blended), from the computed styles.
CONTRAST_JS = """() => {
  const parse = (c) => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const channel = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const behind = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    // Under everything, the canvas: Chromium's is white, or near-black in a dark color-scheme.
    const canvas = matchMedia("(prefers-color-scheme: dark)").matches ? [18, 18, 18, 1] : [255, 255, 255, 1];
    return layers.reverse().reduce((under, top) => over(top, under), canvas);
  };
  const results = [];
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!walker.currentNode.textContent.trim() || seen.has(el)) continue;
    seen.add(el);
    const style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    if (style.visibility === "hidden" || !box.width || !box.height || el.closest(".skip")) continue;
    const bg = behind(el);
    const fg = over(parse(style.color), bg);
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (parseInt(style.fontWeight) >= 700 && size >= 18.66);
    results.push({
      text: walker.currentNode.textContent.trim().slice(0, 40),
      element: el.tagName.toLowerCase() + (el.className ? "." + el.className : ""),
      ratio: (hi + 0.05) / (lo + 0.05),
      needed: large ? 3 : 4.5,
      colours: style.color + " on rgb(" + bg.slice(0, 3).map(Math.round) + ")",
    });
  }
  return results;
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_contrast_meets_wcag_aa(scene, monkeypatch, live_server_url, scheme):
    r = f"/{OWNER}/{NAME}"
    failures, checked = [], 0
    with chromium_page(monkeypatch, width=1280, height=900, color_scheme=scheme) as page:
        page.goto(live_server_url + "/")
        assert page.evaluate(f"matchMedia('(prefers-color-scheme: {scheme})').matches")
        sign_up = [t for t in page.evaluate(CONTRAST_JS) if t["text"] == "Sign up"]
        assert sign_up and sign_up[0]["ratio"] >= 4.5, sign_up
        for who in ("anonymous", "owner"):
            if who == "owner":
                sign_in(page, live_server_url)
            for path in (
                "/",
                "/login",
                "/signup",
                r,
                f"{r}/tree/main/src",
                f"{r}/pushlog?workspaces=1",
                f"{r}/bundles",
                f"{r}/proposals",
                f"{r}/commit/{scene['head']}",
                "/settings/keys",
                "/help/ssh",
                f"{r}/settings/keys",
            ):
                page.goto(live_server_url + path)
                for text in page.evaluate(CONTRAST_JS):
                    checked += 1
                    if text["ratio"] < text["needed"]:
                        failures.append(
                            f"{path} ({who}): {text['element']} {text['text']!r} {text['ratio']:.2f} < {text['needed']} ({text['colours']})"
                        )
    assert checked > 200
    assert not failures, f"low contrast ({scheme}):\n" + "\n".join(sorted(set(failures)))


def test_tree_icons_are_svg_and_no_emoji_is_left(scene, monkeypatch, live_server_url):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        page.goto(f"{live_server_url}/{OWNER}/{NAME}/tree/main/src")
        icons = page.evaluate(
            """() => [...document.querySelectorAll('table.tree tr')].map((row) => {
                 const use = row.querySelector('td.icon svg use');
                 const box = use && row.querySelector('td.icon svg').getBoundingClientRect();
                 return [row.querySelector('td.name').innerText.split(' ')[0], use && use.getAttribute('href').split('#')[1],
                         box && [box.width, box.height], use && use.getBBox().width > 0];
               })"""
        )
        by_name = {name: (icon, size, painted) for name, icon, size, painted in icons}
        assert by_name == {
            "link.py": ("i-symlink", [16, 16], True),
            "long.py": ("i-file", [16, 16], True),
            "vendored": ("i-submodule", [16, 16], True),
        }, icons
        page.goto(f"{live_server_url}/{OWNER}/{NAME}")
        assert page.evaluate(
            "document.querySelector('table.tree tr.tree use').getAttribute('href')"
        ).endswith("#i-folder")
        assert page.locator("header .brand svg.logo").count() == 1
        for path in ("/", f"/{OWNER}/{NAME}", f"/{OWNER}/{NAME}/tree/main/src"):
            page.goto(live_server_url + path)
            # No emoji anywhere a font would have to draw them.
            assert not page.evaluate("/[\\p{Extended_Pictographic}]/u.test(document.body.innerText)"), path
        assert page.evaluate(
            "[...document.querySelectorAll('link[rel=icon]')].map(l => l.getAttribute('href'))"
        ) == [
            "/favicon.ico",
            "/static/img/favicon.svg",
        ]


def test_pushlog_page_filters_by_user_and_branch(scene, monkeypatch, live_server_url):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        page.goto(f"{live_server_url}/{OWNER}/{NAME}")
        with page.expect_navigation():
            page.click("nav.tabs >> text=Pushlog")
        assert page.url.endswith(f"/{OWNER}/{NAME}/pushlog")
        users = lambda: page.locator("li.push .push-user").all_inner_texts()  # noqa: E731
        # Workspaces are left out until asked for.
        assert users()[:2] == [OWNER, OWNER] and "contributor-with-a-rather-long-name" not in users()
        page.check("input[name=workspaces]")
        page.fill("input[name=user]", "contributor-with-a-rather-long-name")
        with page.expect_navigation():
            page.click("form.pushlog-filters button[type=submit]")
        assert users() == ["contributor-with-a-rather-long-name"]
        assert (
            "refs/users/contributor-with-a-rather-long-name/" + BRANCH in page.locator("li.push").inner_text()
        )
        page.fill("input[name=user]", "")
        page.fill("input[name=ref]", BRANCH)
        with page.expect_navigation():
            page.click("form.pushlog-filters button[type=submit]")
        # The owner's push of the branch and the import, which brought every branch.
        pushes = [push.locator("code.ref").all_inner_texts() for push in page.locator("li.push").all()]
        assert pushes == [[f"refs/heads/{BRANCH}"], [f"refs/heads/{BRANCH}", "refs/heads/main"]], pushes
        assert page.input_value("input[name=ref]") == BRANCH and page.is_checked("input[name=workspaces]")
        # The json-pushes link carries the same filters.
        with page.expect_navigation():
            page.click("text=json-pushes")
        assert '"pushes"' in page.content() and f"refs/heads/{BRANCH}" in page.content()


def test_api_reference_renders_from_our_origin_under_the_csp(monkeypatch, live_server_url):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        messages, errors, foreign = [], [], []
        page.on("console", lambda message: messages.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on(
            "request",
            lambda request: None if request.url.startswith(live_server_url) else foreign.append(request.url),
        )
        page.goto(live_server_url + "/")
        with page.expect_navigation():
            page.click("footer >> text=API reference")
        assert page.url == f"{live_server_url}/api/v1/docs/"
        page.wait_for_selector(".opblock-summary", timeout=30_000)
        operations = page.locator(".opblock-summary-path").all_inner_texts()
        assert len(operations) > 20 and any("/api/v1/repos/" in op for op in operations), operations[:5]
        page.locator(".opblock-summary").first.click()  # an operation opens
        page.wait_for_selector(".opblock-body", timeout=10_000)
        csp = page.evaluate("fetch(location.href).then(r => r.headers.get('content-security-policy'))")
        assert "script-src 'self';" in csp and "unsafe" not in csp
    assert not [m for m in messages if "Content Security Policy" in m or "Refused" in m], messages
    assert not errors and not foreign, (errors, foreign)
