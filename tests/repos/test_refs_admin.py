"""Admins remove refs (repos/refs_admin.py): the service, the settings page and the API, on a real
bare repository whose refs are written on disk the way an import with `--refs all` or a GitHub
mirror leaves them. Every refusal leaves every ref where it was and records nothing."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client
from rest_framework.test import APIClient

from repos import refs_admin, services
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.git import run_git
from repos.models import Mirror, Push, Role, Visibility
from tests.factories import RepositoryFactory, UserFactory
from workspaces.models import ProtectedBranch

pytestmark = pytest.mark.django_db
ZERO = "0" * 40
XSS = 'refs/pull/<b>x</b>"&'


def commit(path, message: str, parent: str | None = None) -> str:
    blob = run_git(["hash-object", "-w", "--stdin"], repo=path, input=message.encode()).text.strip()
    tree = run_git(["mktree"], repo=path, input=f"100644 blob {blob}\tf\n".encode()).text.strip()
    return run_git(
        ["commit-tree", tree, "-m", message, *(["-p", parent] if parent else [])], repo=path
    ).text.strip()


def put_refs(repo, refs: dict[str, str]) -> None:
    lines = "".join(f"update {ref} {sha}\n" for ref, sha in refs.items())
    run_git(["update-ref", "--stdin"], repo=repo.disk_path, input=lines.encode())


def on_disk(repo) -> dict[str, str]:
    out = run_git(["for-each-ref", "--format=%(refname) %(objectname)"], repo=repo.disk_path).text
    return dict(line.split(" ", 1) for line in out.splitlines())


class Scene:
    pass


@pytest.fixture
def scene():
    s = Scene()
    s.owner, s.maint, s.reader, s.alice = (UserFactory(username=n) for n in ("olga", "mia", "rex", "alice"))
    s.repo = RepositoryFactory(owner=s.owner, name="proj")
    services.membership_set(repo=s.repo, user=s.maint, role=Role.MAINTAINER)
    services.membership_set(repo=s.repo, user=s.reader, role=Role.READER)
    path = s.repo.disk_path
    c1 = commit(path, "one")
    c2 = commit(path, "two", c1)
    c3 = commit(path, "three", c2)
    s.c1, s.c2, s.c3 = c1, c2, c3
    put_refs(
        s.repo,
        {
            "refs/heads/main": c2,
            "refs/heads/feature": c3,
            "refs/heads/release": c1,
            "refs/tags/v1": c1,
            "refs/pull/1/head": c2,
            "refs/pull/2/head": c3,
            "refs/pull/2/merge": c3,
            XSS: c1,
            "refs/remotes/origin/main": c2,
            "refs/keep-around/" + c1: c1,
            "refs/notes/commits": c1,
            "refs/stash": c3,
            "refs/imported/pull/7/head": c3,
            "refs/imported/remotes/origin/main": c2,
            "refs/users/alice/x": c3,
            "refs/archive/alice/1": c2,
            "refs/takedown/bob/y": c1,
        },
    )
    run_git(["tag", "-a", "v2", "-m", "two", c2], repo=path)
    run_git(["symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"], repo=path)
    ProtectedBranch.objects.create(repository=s.repo, name="release")
    s.before = on_disk(s.repo)
    return s


def unchanged(s) -> bool:
    return on_disk(s.repo) == s.before and not Push.objects.filter(repository=s.repo).exists()


# --- the service -------------------------------------------------------------------------------------


def test_namespaces_with_counts_and_pages(scene):
    listing = refs_admin.refs_list(scene.repo, "")
    counts = {ns.prefix: ns.count for ns in listing.namespaces}
    assert counts == {
        "refs/heads/": 3,
        "refs/tags/": 2,
        "refs/pull/": 4,
        "refs/remotes/": 2,
        "refs/keep-around/": 1,
        "refs/notes/": 1,
        "refs/stash": 1,
        "refs/imported/pull/": 1,
        "refs/imported/remotes/": 1,
    }
    assert [ns.prefix for ns in listing.namespaces][:2] == ["refs/heads/", "refs/tags/"]
    assert not any(e.ref.startswith(("refs/users/", "refs/archive/", "refs/takedown/")) for e in listing.refs)
    pulls = refs_admin.refs_list(scene.repo, "refs/pull/", page=2, per_page=3)
    assert (pulls.prefix, pulls.total, pulls.page, pulls.pages) == ("refs/pull", 4, 2, 2)
    assert [e.ref for e in pulls.refs] == [XSS]  # byte order: 1/head, 2/head, 2/merge, <b>...
    assert refs_admin.refs_list(scene.repo, "refs/pull").total == 4  # the slash is optional
    assert refs_admin.refs_list(scene.repo, "refs/pul").total == 0  # whole components only
    head = next(e for e in refs_admin.refs_list(scene.repo, "refs/remotes/").refs if e.ref.endswith("HEAD"))
    assert head.symref == "refs/remotes/origin/main"
    for bad in ("refs/users/", "refs/archive", "refs/takedown/bob", "heads", "refs/a..b", "refs/x\ny", 7):
        with pytest.raises(InvalidInput):
            refs_admin.refs_list(scene.repo, bad)


def test_an_admin_removes_refs_recorded_as_a_push(scene):
    removal = refs_admin.ref_remove(
        repo=scene.repo, refs=["refs/pull/1/head", "refs/stash", "refs/tags/v2"], actor=scene.owner, via="web"
    )
    after = on_disk(scene.repo)
    assert {"refs/pull/1/head", "refs/stash", "refs/tags/v2"}.isdisjoint(after)
    assert len(after) == len(scene.before) - 3
    push = removal.push
    assert (push.pusher, push.protocol, push.repository) == (scene.owner, "web", scene.repo)
    updates = {u.ref: (u.old, u.new) for u in push.ref_updates.all()}
    assert updates == {
        "refs/pull/1/head": (scene.c2, ZERO),
        "refs/stash": (scene.c3, ZERO),
        "refs/tags/v2": (scene.before["refs/tags/v2"], ZERO),
    }  # the tag object, not the commit


def test_a_symbolic_ref_goes_not_the_branch_it_points_at(scene):
    refs_admin.ref_remove(repo=scene.repo, refs=["refs/remotes/origin/HEAD"], actor=scene.owner, via="api")
    after = on_disk(scene.repo)
    assert "refs/remotes/origin/HEAD" not in after and after["refs/remotes/origin/main"] == scene.c2


@pytest.mark.parametrize(
    "refs, error, words",
    [
        (["refs/users/alice/x"], InvalidInput, "workspace ref"),
        (["refs/archive/alice/1"], InvalidInput, "internal to the platform"),
        (["refs/takedown/bob/y"], InvalidInput, "internal to the platform"),
        (["refs/heads/main"], Forbidden, "default branch and cannot be deleted"),
        (["refs/heads/release"], Forbidden, "protected branch and cannot be deleted"),
        (["refs/pull/2/head", "refs/heads/main"], Forbidden, "default branch"),  # all or none
        (["refs/pull/9/head"], NotFound, "does not exist"),
        (["refs/pull/1/head", "refs/pull/9/head"], NotFound, "does not exist"),
        (["refs/heads/a..b"], InvalidInput, "not a valid ref name"),
        (["HEAD"], InvalidInput, "not a ref name"),
        (["refs/pull/1/head\ndelete refs/heads/main"], InvalidInput, "not a ref name"),
        (["refs/" + "x" * 260], InvalidInput, "not a ref name"),
        ([], InvalidInput, "list of full ref names"),
        ("refs/pull/1/head", InvalidInput, "list of full ref names"),
        ([["refs/pull/1/head"]], InvalidInput, "not a ref name"),
        ([None], InvalidInput, "not a ref name"),
    ],
)
def test_what_cannot_be_removed_changes_nothing(scene, refs, error, words):
    with pytest.raises(error) as exc:
        refs_admin.ref_remove(repo=scene.repo, refs=refs, actor=scene.owner, via="api")
    assert words in exc.value.message
    assert unchanged(scene)


def test_only_admins_remove_and_a_mirror_keeps_its_branches_and_tags(scene):
    for user in (scene.maint, scene.reader, scene.alice, UserFactory(username="staff", is_staff=True)):
        with pytest.raises(Forbidden):
            refs_admin.ref_remove(repo=scene.repo, refs=["refs/pull/1/head"], actor=user, via="api")
        with pytest.raises(Forbidden):
            refs_admin.namespace_remove(repo=scene.repo, prefix="refs/pull/", actor=user, via="web")
    Mirror.objects.create(repository=scene.repo, url="https://example.org/up.git")
    for ref in ("refs/heads/feature", "refs/tags/v1"):
        with pytest.raises(Forbidden, match="come back at the next"):
            refs_admin.ref_remove(repo=scene.repo, refs=[ref], actor=scene.owner, via="web")
    with pytest.raises(Forbidden):
        refs_admin.namespace_remove(repo=scene.repo, prefix="refs/tags/", actor=scene.owner, via="web")
    assert unchanged(scene)
    refs_admin.ref_remove(
        repo=scene.repo, refs=["refs/pull/1/head"], actor=scene.owner, via="web"
    )  # still fine


def test_compare_and_delete_keeps_a_ref_that_moved(scene):
    with pytest.raises(Conflict, match="moved since you looked"):
        refs_admin.ref_remove(
            repo=scene.repo,
            refs=["refs/pull/1/head"],
            actor=scene.owner,
            via="web",
            expected={"refs/pull/1/head": scene.c1},
        )
    assert unchanged(scene)

    def push_lands(repo, entries):  # a push moving one of them between the read and the delete
        run_git(["update-ref", "refs/pull/2/head", scene.c1], repo=repo.disk_path)

    refs_admin.before_delete = push_lands
    try:
        with pytest.raises(Conflict, match="nothing was removed"):
            refs_admin.namespace_remove(repo=scene.repo, prefix="refs/pull/", actor=scene.owner, via="web")
    finally:
        refs_admin.before_delete = refs_admin._noop
    after = on_disk(scene.repo)
    assert after["refs/pull/2/head"] == scene.c1 and after["refs/pull/1/head"] == scene.c2
    assert not Push.objects.exists()


def test_a_namespace_goes_in_one_transaction(scene):
    for bad in ("", "refs", "refs/", "refs/users/", "refs/users/alice", "refs/archive/", "x/y", "refs/a b"):
        with pytest.raises(InvalidInput):
            refs_admin.namespace_remove(repo=scene.repo, prefix=bad, actor=scene.owner, via="web")
    with pytest.raises(NotFound):
        refs_admin.namespace_remove(repo=scene.repo, prefix="refs/changes/", actor=scene.owner, via="web")
    with pytest.raises(Forbidden, match="default branch"):
        refs_admin.namespace_remove(repo=scene.repo, prefix="refs/heads", actor=scene.owner, via="web")
    assert unchanged(scene)
    removal = refs_admin.namespace_remove(
        repo=scene.repo, prefix="refs/imported/", actor=scene.owner, via="api"
    )
    assert sorted(e.ref for e in removal.removed) == [
        "refs/imported/pull/7/head",
        "refs/imported/remotes/origin/main",
    ]
    assert not any(ref.startswith("refs/imported/") for ref in on_disk(scene.repo))
    assert removal.push.ref_updates.count() == 2


@pytest.mark.parametrize("how", ["namespace", "list"])
def test_five_thousand_refs_at_once(scene, how):
    refs = {f"refs/pull/{n}/head": (scene.c1, scene.c2, scene.c3)[n % 3] for n in range(100, 5100)}
    put_refs(scene.repo, refs)
    run_git(["pack-refs", "--all"], repo=scene.repo.disk_path)  # as a fetch of thousands leaves them
    start = time.monotonic()
    if how == "namespace":
        removal = refs_admin.namespace_remove(
            repo=scene.repo, prefix="refs/pull/", actor=scene.owner, via="api"
        )
    else:
        removal = refs_admin.ref_remove(repo=scene.repo, refs=list(refs), actor=scene.owner, via="api")
    took = time.monotonic() - start
    after = on_disk(scene.repo)
    assert not any(ref in after for ref in refs)
    expected = 5004 if how == "namespace" else 5000
    assert len(removal.removed) == expected and removal.push.ref_updates.count() == expected
    assert Push.objects.filter(repository=scene.repo).count() == 1
    assert took < 30, took
    print(f"removed {expected} refs ({how}) in {took:.2f}s")


# --- the page ----------------------------------------------------------------------------------------


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_page_is_for_admins_only(scene):
    url = "/olga/proj/settings/refs"
    for client in (Client(), signed_in(scene.maint), signed_in(scene.reader), signed_in(scene.alice)):
        assert client.get(url).status_code == 404
        assert client.post(url, {"action": "remove", "ref": "refs/pull/1/head"}).status_code == 404
    services.repository_update(repo=scene.repo, visibility=Visibility.PRIVATE)
    assert (
        Client().get(url).status_code == 404 and Client().get(url + "?prefix=refs/pull/").status_code == 404
    )
    assert unchanged(scene)


def test_the_page_lists_escapes_and_removes(scene):
    web = signed_in(scene.owner)
    page = web.get("/olga/proj/settings/refs").content.decode()
    assert (
        "refs/keep-around/" in page
        and "refs/imported/pull/" in page
        and "refs/users/" not in page.split("<h2>")[1]
    )
    assert "never advertised" in page
    page = web.get("/olga/proj/settings/refs?prefix=refs/pull/").content.decode()
    assert "refs/pull/&lt;b&gt;x&lt;/b&gt;&quot;&amp;" in page and "<b>x</b>" not in page
    assert web.get("/olga/proj/settings/refs?prefix=refs/users/").status_code == 400

    response = web.post(
        "/olga/proj/settings/refs",
        {"action": "remove", "ref": XSS, "old": scene.c1, "return_prefix": "refs/pull"},
        follow=True,
    )
    assert XSS not in on_disk(scene.repo)
    assert response.redirect_chain[-1][0].endswith("?prefix=refs%2Fpull")
    assert Push.objects.get().protocol == "web"
    # A stale form (the ref moved since the page was drawn) removes nothing.
    page = web.post(
        "/olga/proj/settings/refs",
        {"action": "remove", "ref": "refs/pull/1/head", "old": scene.c1},
        follow=True,
    ).content.decode()
    assert "moved since you looked" in page and "refs/pull/1/head" in on_disk(scene.repo)
    # A namespace needs its prefix typed.
    for confirm in ("", "refs/pul", "refs/heads/"):
        web.post(
            "/olga/proj/settings/refs",
            {"action": "remove_namespace", "prefix": "refs/pull/", "confirm": confirm},
        )
        assert "refs/pull/1/head" in on_disk(scene.repo)
    web.post(
        "/olga/proj/settings/refs",
        {"action": "remove_namespace", "prefix": "refs/pull/", "confirm": "refs/pull"},
    )
    assert not any(ref.startswith("refs/pull/") for ref in on_disk(scene.repo))
    # A branch or tag by name; the default branch stays, with the reason shown.
    web.post("/olga/proj/settings/refs", {"action": "remove_name", "kind": "branch", "name": "feature"})
    web.post("/olga/proj/settings/refs", {"action": "remove_name", "kind": "tag", "name": "v1"})
    page = web.post(
        "/olga/proj/settings/refs", {"action": "remove_name", "kind": "branch", "name": "main"}, follow=True
    ).content.decode()
    assert "default branch and cannot be deleted" in page
    after = on_disk(scene.repo)
    assert "refs/heads/feature" not in after and "refs/tags/v1" not in after and "refs/heads/main" in after
    assert Push.objects.filter(repository=scene.repo).count() == 4


# --- the API -----------------------------------------------------------------------------------------


def api(user=None, scope="write") -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=user, scope=scope)[1]}")
    return client


def test_the_api_lists_for_admins_only(scene):
    body = api(scene.owner).get("/api/v1/repos/olga/proj/refs?prefix=refs/pull/&per_page=2").json()
    assert body["count"] == 4 and len(body["results"]) == 2 and body["next"]
    assert {"ref": "refs/pull/1/head", "sha": scene.c2, "symref": ""} in body["results"]
    assert {"prefix": "refs/imported/pull/", "count": 1} in body["namespaces"]
    assert api(scene.owner).get("/api/v1/repos/olga/proj/refs?prefix=refs/users/").status_code == 400
    # Anonymous writes are 401 before any lookup, whether or not the repository is visible.
    for user in (None, scene.reader, scene.maint):
        assert api(user).get("/api/v1/repos/olga/proj/refs").status_code == 403
        assert api(user).delete("/api/v1/repos/olga/proj/refs/pull/1/head").status_code == (
            401 if user is None else 403
        )
    services.repository_update(repo=scene.repo, visibility=Visibility.PRIVATE)
    for user in (None, scene.alice):
        write = 401 if user is None else 404
        assert api(user).get("/api/v1/repos/olga/proj/refs").status_code == 404
        assert api(user).delete("/api/v1/repos/olga/proj/refs/pull/1/head").status_code == write
        assert (
            api(user)
            .post("/api/v1/repos/olga/proj/refs/remove", {"prefix": "refs/pull/"}, format="json")
            .status_code
            == write
        )
    assert (
        api(scene.owner, scope="read").delete("/api/v1/repos/olga/proj/refs/pull/1/head").status_code == 403
    )
    assert unchanged(scene)


def test_the_api_removes_one_or_many(scene):
    admin = api(scene.owner)
    assert admin.delete(f"/api/v1/repos/olga/proj/refs/pull/1/head?sha={scene.c1}").status_code == 409
    assert admin.delete("/api/v1/repos/olga/proj/refs/pull/1/head?sha=nope").status_code == 400
    assert admin.delete("/api/v1/repos/olga/proj/refs/heads/main").status_code == 403
    assert admin.delete("/api/v1/repos/olga/proj/refs/pull/1/head%09").status_code == 400
    assert (
        admin.delete("/api/v1/repos/olga/proj/refs/pull/1/head%0a").status_code == 400
    )  # a control character
    assert admin.delete("/api/v1/repos/olga/proj/refs/pull/404/head").status_code == 404
    for body in (
        {},
        {"prefix": "refs/pull/", "refs": ["refs/stash"]},
        {"refs": "refs/stash"},
        {"refs": []},
        {"refs": [1]},
        {"prefix": ["refs/pull/"]},
        {"prefix": "refs/users/"},
        {"refs": ["refs/archive/alice/1"]},
        {"refs": ["refs/x"] * 10_001},
    ):
        response = admin.post(
            "/api/v1/repos/olga/proj/refs/remove", json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 400, (body, response.content)
        assert "error" in response.json()
    assert unchanged(scene)

    assert admin.delete(f"/api/v1/repos/olga/proj/refs/pull/1/head?sha={scene.c2}").status_code == 204
    # refs/remove is a ref name too: DELETE on the bulk route removes it.
    put_refs(scene.repo, {"refs/remove": scene.c1})
    assert admin.delete("/api/v1/repos/olga/proj/refs/remove").status_code == 204
    body = admin.post(
        "/api/v1/repos/olga/proj/refs/remove", {"refs": ["refs/stash", "refs/notes/commits"]}, format="json"
    ).json()
    assert body["removed"] == 2
    body = admin.post("/api/v1/repos/olga/proj/refs/remove", {"prefix": "refs/pull/"}, format="json").json()
    assert body["removed"] == 3
    assert Push.objects.get(pk=body["push_id"]).protocol == "api"
    after = on_disk(scene.repo)
    assert not {"refs/remove", "refs/stash", "refs/notes/commits"} & set(after)
    assert not any(ref.startswith("refs/pull/") for ref in after)
    assert {u.ref for u in Push.objects.get(pk=body["push_id"]).ref_updates.all()} == {
        XSS,
        "refs/pull/2/head",
        "refs/pull/2/merge",
    }
