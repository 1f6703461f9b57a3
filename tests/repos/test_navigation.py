"""Finding refs: refs.json, the branches and tags pages, the sidebar, the compare picker,
workspace refs browsed by their full name, and the /c/ page for prefixes that name nothing."""

from __future__ import annotations

import io
import json
import os
import re
import tarfile

import pytest
from django.test import Client

from gitcore.git import run_git
from repos import refnav
from tests.factories import UserFactory
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

# Legal in a ref name, and markup if a page forgot to escape it.
MARKUP_TAG = 'x<b>"bold"</b>&amp'
NON_UTF8_REF = os.fsdecode(b"refs/users/alice/caf\xe9")


@pytest.fixture
def scene(tmp_path, git_home):
    """olga/proj: main, an older branch `old` and a newer `feature/deep/x`; version tags
    v1.0..v1.10 and v0.1..v0.58 (69), a tag named with markup and one not UTF-8; alice's workspace
    (refs/users/alice/fix/deep, and one ref whose name is not UTF-8), bob's (refs/users/bob/w),
    hugo's (hidden) and tess's (taken down), each adding a file; otto reads, sam is staff."""
    from workspaces import moderation

    work = Work(tmp_path / "w", git_home)
    first = work.commit("first", {"README.md": "# proj\n", "docs/guide.md": "# Guide\n"})
    work.git("branch", "old")
    work.git("checkout", "-q", "-b", "feature/deep/x")
    work.commit("feature", {"feature.txt": "f\n"})
    heads = {}
    for user in ("alice", "bob", "hugo", "tess"):
        work.git("checkout", "-q", "-b", f"ws-{user}", "main")
        heads[user] = work.commit(f"{user}'s work", {"work.txt": f"{user}-secret-text\n"})
    work.git("checkout", "-q", "main")
    repo = work.publish(owner="olga", name="proj")
    path = repo.disk_path
    lines = [f"create refs/tags/v1.{i} {first}\n" for i in range(11)]
    lines += [f"create refs/tags/v0.{i} {first}\n" for i in range(1, 59)]
    lines.append(f"create refs/tags/{MARKUP_TAG} {first}\n")
    names = {"alice": "fix/deep", "bob": "w", "hugo": "w", "tess": "w"}
    for user, head in heads.items():
        lines.append(f"delete refs/heads/ws-{user}\n")
        lines.append(f"create refs/users/{user}/{names[user]} {head}\n")
    run_git(["update-ref", "--stdin"], repo=path, input="".join(lines).encode())
    run_git(["update-ref", NON_UTF8_REF, heads["alice"]], repo=path)
    run_git(["update-ref", os.fsdecode(b"refs/tags/t\xe9"), first], repo=path)
    users = {name: UserFactory(username=name) for name in ("alice", "bob", "hugo", "tess", "otto")}
    users["olga"] = repo.owner
    users["sam"] = UserFactory(username="sam", is_staff=True)
    moderation.do_hide_workspace(repo=repo, user=users["hugo"], acting_user=users["sam"], reason="abuse")
    moderation.do_take_down_workspace(repo=repo, user=users["tess"], acting_user=users["sam"], reason="DMCA")
    return {"repo": repo, "users": users, "heads": heads, "first": first}


def client(scene, who: str | None = None) -> Client:
    c = Client()
    if who:
        c.force_login(scene["users"][who])
    return c


def refs_json(c: Client, **params) -> dict:
    response = c.get("/olga/proj/refs.json", params)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/json"
    return response.json()


# --- version order, refs.json ---------------------------------------------------------------


def test_tags_sort_by_version_newest_first(scene):
    names = [ref.name for ref in refnav.tags(scene["repo"].disk_path)]
    assert names.index("v1.10") < names.index("v1.9") < names.index("v1.2") < names.index("v1.0")
    assert names.index("v1.0") < names.index("v0.58") < names.index("v0.9")


def test_branches_default_first_then_newest_commit(scene):
    names = [ref.name for ref in refnav.branches(scene["repo"].disk_path, "main")]
    assert names[0] == "main" and names.index("feature/deep/x") < names.index("old")


def test_refs_json_filters_caps_and_keeps_names_as_data(scene):
    c = client(scene)
    data = refs_json(c, kind="tag", q="V1.1")  # any case
    assert [r["name"] for r in data["refs"]] == ["v1.10", "v1.1"] and data["total"] == 2
    markup = refs_json(c, kind="tag", q="<b>")
    assert markup["refs"] == [{"name": MARKUP_TAG, "ref": "x%3Cb%3E%22bold%22%3C/b%3E%26amp"}]
    everything = refs_json(c, kind="tag")
    assert everything["total"] == 71 and len(everything["refs"]) == 71
    # A name that is not UTF-8 shows with U+FFFD and links by its object id, which opens.
    broken = refs_json(c, kind="tag", q="t\ufffd")["refs"]
    assert broken == [{"name": "t\ufffd", "ref": scene["first"]}]
    assert c.get(f"/olga/proj/tree/{broken[0]['ref']}").status_code == 200
    assert everything["more_url"] == "/olga/proj/tags"
    branches = refs_json(c, kind="branch")
    assert [r["name"] for r in branches["refs"]] == ["main", "feature/deep/x", "old"]


def test_refs_json_lists_no_workspace_or_hidden_ref_to_anyone(scene):
    for who in (None, "otto", "hugo", "olga", "sam"):
        c = client(scene, who)
        for kind in ("branch", "tag"):
            text = json.dumps(refs_json(c, kind=kind))
            assert "users" not in text and "secret" not in text and "takedown" not in text
        assert c.get("/olga/proj/refs.json", {"kind": "workspace"}).status_code == 400
    assert client(scene).get("/olga/proj/refs.json", {"q": "x" * 201}).status_code == 400


def test_refs_json_and_ref_pages_of_a_private_repository_are_404_to_outsiders(tmp_path, git_home):
    work = Work(tmp_path / "p", git_home)
    work.commit("first", {"a.txt": "a\n"})
    repo = work.publish(owner="pia", name="secret", private=True)
    outsider = Client()
    outsider.force_login(UserFactory(username="otto"))
    owner = Client()
    owner.force_login(repo.owner)
    for url in ("/pia/secret/refs.json", "/pia/secret/branches", "/pia/secret/tags", "/pia/secret/compare"):
        assert Client().get(url).status_code == 404, url
        assert outsider.get(url).status_code == 404, url
        assert owner.get(url).status_code == 200, url


def test_tags_page_escapes_names_and_pages_through_them(scene):
    page = client(scene).get("/olga/proj/tags", {"q": "<b>"}).content.decode()
    assert "x&lt;b&gt;&quot;bold&quot;&lt;/b&gt;&amp;amp" in page and '<b>"bold' not in page
    assert 'href="/olga/proj/tree/x%3Cb%3E%22bold%22%3C/b%3E%26amp"' in page
    listed = client(scene).get("/olga/proj/tags").content.decode()
    assert "(71)" in listed and listed.index(">v1.10<") < listed.index(">v1.9<")
    assert client(scene).get("/olga/proj/branches", {"page": "999"}).status_code == 200


# --- the repository page's sidebar ----------------------------------------------------------


def test_sidebar_links_the_first_tags_by_version_and_counts_the_rest(scene):
    page = client(scene).get("/olga/proj").content.decode()
    tags = page.split('id="sidebar-tags"', 1)[1].split("</ul>", 1)[0]
    shown = re.findall(r'href="/olga/proj/tree/([^"]+)"', tags)
    # Newest version first; "x..." sorts after every "v..." name, so it leads.
    assert shown == ["x%3Cb%3E%22bold%22%3C/b%3E%26amp", *(f"v1.{i}" for i in range(10, 1, -1))]
    assert '<a href="/olga/proj/tags">61 more</a>' in page
    branches = page.split('id="sidebar-branches"', 1)[1].split("</ul>", 1)[0]
    assert re.findall(r'href="/olga/proj/tree/([^"]+)"', branches) == ["main", "feature/deep/x", "old"]
    aside = page.split("<aside>", 1)[1].split("</aside>", 1)[0]
    assert "/olga/proj/branches" not in aside and "61 more" in aside  # three branches: no "N more"


# --- workspace refs by their full name ------------------------------------------------------


WS_PAGES = (
    "/olga/proj/tree/refs/users/{user}/{name}",
    "/olga/proj/tree/refs/users/{user}/{name}/",
    "/olga/proj/blob/refs/users/{user}/{name}/work.txt",
    "/olga/proj/raw/refs/users/{user}/{name}/work.txt",
    "/olga/proj/commits/refs/users/{user}/{name}",
    "/olga/proj/commits/refs/users/{user}/{name}/work.txt",
    "/olga/proj/compare/main...refs/users/{user}/{name}",
    "/olga/proj/compare/refs/users/{user}/{name}",
    "/olga/proj/archive/refs/users/{user}/{name}.tar.gz",
)


_CSRF = re.compile(r'(csrfmiddlewaretoken" value="|csrf-token" content=")[^"]*')


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _page(response) -> str:
    """The page's text without its per-request CSRF token."""
    return _CSRF.sub(r"\1", _body(response).decode())


def test_visible_workspace_refs_browse_by_full_name(scene):
    for who in (None, "otto", "alice", "sam"):
        c = client(scene, who)
        for user, name in (("alice", "fix/deep"), ("bob", "w")):
            for url in WS_PAGES:
                url = url.format(user=user, name=name)
                response = c.get(url)
                assert response.status_code == 200, (who, url, response.status_code)
                if "/raw/" in url:
                    assert _body(response) == f"{user}-secret-text\n".encode()
    tree = client(scene).get("/olga/proj/tree/refs/users/alice/fix/deep").content.decode()
    # Links on the page stay on the ref, and the switcher shows its name.
    assert 'href="/olga/proj/blob/refs/users/alice/fix/deep/work.txt"' in tree
    assert 'data-current="refs/users/alice/fix/deep"' in tree
    archive = _body(client(scene).get("/olga/proj/archive/refs/users/bob/w.tar.gz"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert any(m.name.endswith("work.txt") for m in tar.getmembers())


def _same_as_missing(c: Client, url: str, missing: str, names: tuple[str, str]) -> None:
    """The same status and page, up to the URL and the name it holds."""
    got, expected = c.get(url), c.get(missing)
    assert got.status_code == expected.status_code == 404, (url, got.status_code, expected.status_code)
    hidden_text = _page(got).replace(url, "<url>").replace(names[0], "<name>")
    missing_text = _page(expected).replace(missing, "<url>").replace(names[1], "<name>")
    assert hidden_text == missing_text, url


@pytest.mark.parametrize(
    "user, blind, seeing",
    [
        ("hugo", (None, "otto", "alice"), ("hugo", "olga", "sam")),
        ("tess", (None, "otto", "tess", "olga", "sam"), ()),
    ],
)
def test_hidden_and_taken_down_workspace_refs_answer_like_missing_ones(scene, user, blind, seeing):
    for who in blind:
        c = client(scene, who)
        for page in WS_PAGES:
            hidden, missing = page.format(user=user, name="w"), page.format(user="nobody", name="w")
            _same_as_missing(c, hidden, missing, (f"refs/users/{user}/w", "refs/users/nobody/w"))
    for who in seeing:
        c = client(scene, who)
        for page in WS_PAGES:
            url = page.format(user=user, name="w")
            assert c.get(url).status_code == 200, (who, url)


def test_workspace_names_that_are_not_utf8_or_not_refs_do_not_crash(scene):
    c = client(scene, "otto")
    # Django keeps bytes that are not UTF-8 percent-encoded: the page goes on by commit id.
    response = c.get("/olga/proj/tree/refs/users/alice/caf%E9")
    assert response.status_code == 200
    assert f'data-current="{scene["heads"]["alice"][:12]}"' in response.content.decode()
    assert c.get("/olga/proj/blob/refs/users/alice/caf%E9/work.txt").status_code == 200
    assert c.get("/olga/proj/workspaces/alice").status_code == 200
    for bad in (
        "refs/users/alice/caf%FF",
        "refs/users/*/w",
        "refs/users/al[ice/w",
        "refs/users/../heads/main",
        "refs/users//w",
        "refs/users/-x/w",
        "refs/users/alice",
        "refs/takedown/tess/w",
        "refs/archive/alice/fix",
    ):
        for kind in ("tree", "commits", "compare", "archive"):
            url = f"/olga/proj/{kind}/{bad}" + (".tar.gz" if kind == "archive" else "")
            assert c.get(url).status_code == 404, url


def test_workspace_pages_link_each_ref_to_its_tree(scene):
    page = client(scene).get("/olga/proj/workspaces/alice").content.decode()
    assert 'href="/olga/proj/tree/refs/users/alice/fix/deep"' in page
    ref_page = client(scene).get("/olga/proj/workspaces/bob/w").content.decode()
    assert 'id="ws-ref-tree" href="/olga/proj/tree/refs/users/bob/w"' in ref_page


# --- the compare picker ---------------------------------------------------------------------


def test_compare_picker_defaults_redirects_and_prefills(scene):
    c = client(scene)
    page = c.get("/olga/proj/compare").content.decode()
    assert 'id="compare-base" name="base" type="text" value="main"' in page
    assert 'id="compare-head" name="head" type="text" value="feature/deep/x"' in page
    assert '<option value="v1.10" label="tag">' in page
    response = c.get("/olga/proj/compare", {"base": "main", "head": "refs/users/bob/w"})
    assert (
        response.status_code == 302 and response["Location"] == "/olga/proj/compare/main...refs/users/bob/w"
    )
    compared = c.get(response["Location"]).content.decode()
    assert 'value="refs/users/bob/w"' in compared
    assert 'id="compare-swap" href="/olga/proj/compare/refs/users/bob/w...main"' in compared
    assert c.get("/olga/proj/compare", {"base": "x" * 2000, "head": "main"}).status_code == 400
    assert c.get("/olga/proj/compare/main...nope").status_code == 404


# --- /c/<prefix> ----------------------------------------------------------------------------


def test_short_hash_pages_are_one_answer_for_malformed_unknown_and_hidden(scene):
    hidden = scene["heads"]["hugo"][:8]
    for who in (None, "otto"):
        c = client(scene, who)
        answers = set()
        for prefix in ("a", "zz", "d0e1f2a3", hidden, hidden.upper()):
            response = c.get(f"/olga/proj/c/{prefix}")
            text = _page(response)
            for shown in (f"/c/{prefix}", f"<code>{prefix}</code>", f"No commit {prefix} "):
                text = text.replace(shown, shown.replace(prefix, "<p>"))
            answers.add((response.status_code, text))
        assert len(answers) == 1, [a[0] for a in answers]
        status, text = answers.pop()
        assert status == 404
        assert "at least 4 hexadecimal digits" in text and 'href="/olga/proj/commits"' in text
        assert 'id="short-hash-form"' in text
    # Owner of the hidden workspace: it opens.
    assert client(scene, "hugo").get(f"/olga/proj/c/{hidden}").status_code == 302
    # The form: a prefix typed into it goes to its /c/ page.
    typed = client(scene).get("/olga/proj/c/zz", {"prefix": scene["first"][:7].upper()})
    assert typed.status_code == 302 and typed["Location"] == f"/olga/proj/c/{scene['first'][:7].upper()}"
    escaped = client(scene).get("/olga/proj/c/zz", {"prefix": "<script>"})
    assert escaped.status_code == 404 and "<script>" not in escaped.content.decode()
