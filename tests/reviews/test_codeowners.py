"""CODEOWNERS: the pattern table, owners and problems, reading it from a branch, the notice on
the branch pages, and code owners asked to review when a proposal opens or gets a revision."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from repos import services as repo_services
from repos.models import Role
from reviews import codeowners, review_requests, services, tasks
from reviews.models import ReviewRequest
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# pattern, path, matches?
TABLE = [
    ("*", "a.txt", True),
    ("*", "deep/in/side.c", True),
    ("*.js", "app.js", True),
    ("*.js", "src/lib/app.js", True),
    ("*.js", "src/app.jsx", False),
    ("/build/", "build/out.o", True),
    ("/build/", "src/build/out.o", False),
    ("/build/", "build", False),  # a trailing slash: contents of a directory only
    ("apps/", "apps/x.py", True),
    ("apps/", "src/apps/deep/x.py", True),
    ("apps/", "myapps/x.py", False),
    ("docs/*", "docs/intro.md", True),
    ("docs/*", "docs/build-app/troubleshooting.md", False),  # GitHub: one level only
    ("/docs/github", "docs/github", True),
    ("/docs/github", "docs/github/x/y.md", True),
    ("/docs/github", "docs/githubber", False),
    ("docs/github", "src/docs/github", False),  # a slash inside anchors it
    ("**/logs", "logs/a.log", True),
    ("**/logs", "deep/logs/a.log", True),
    ("logs/**", "logs/a/b.log", True),
    ("logs/**", "logs", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "a/x/c", False),
    ("README", "README", True),
    ("README", "sub/README", True),
    ("?.txt", "a.txt", True),
    ("?.txt", "ab.txt", False),
    ("a+b(c).txt", "a+b(c).txt", True),  # regex characters are literal
]


@pytest.mark.parametrize(("pattern", "path", "expected"), TABLE)
def test_patterns(pattern, path, expected):
    assert bool(codeowners.compile_pattern(pattern).match(path)) is expected


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("!keep.txt", "negation"),
        ("[abc].txt", "character ranges"),
        ("a\\#b", "escapes"),
        ("/", "only slashes"),
        ("a//b", "empty path segment"),
        ("a**b", "whole path segment"),
    ],
)
def test_bad_patterns_are_refused(pattern, reason):
    with pytest.raises(codeowners.BadPattern, match=reason):
        codeowners.compile_pattern(pattern)


def test_hostile_patterns_stay_cheap():
    # A regex translation would backtrack for minutes on this; the segment matcher does not.
    started = time.perf_counter()
    stars = codeowners.compile_pattern("*a" * 30 + "b")
    deep = codeowners.compile_pattern("/".join(["**", "x"] * 20 + ["z"]))
    assert not stars.match("a" * 3000)
    assert not deep.match("/".join(["x"] * 200) + "/y")
    assert time.perf_counter() - started < 2
    with pytest.raises(codeowners.BadPattern, match="longer than"):
        codeowners.compile_pattern("a" * 1001)


def test_many_owners_are_bounded():
    text = "\n".join(f"f{i} @user{i}" for i in range(600))
    parsed = codeowners.parse(text)
    assert parsed.problems[0].message.startswith("more than 500 distinct owners")


def test_parse_resolves_owners_and_reports_every_problem():
    UserFactory(username="Alice", email="alice@example.invalid")
    UserFactory(username="carol", email="c@example.invalid", commit_email="carol@commits.invalid")
    UserFactory(username="gone", is_active=False)
    text = "\n".join(
        [
            "# comment",
            "*           @alice",  # line 2: usernames are case-insensitive
            "*.py        @alice carol@commits.invalid  # trailing comment @nobody",
            "!secret     @alice",
            "docs/       @org/team @nobody nobody@example.invalid not-an-owner @gone",
            "vendor/",  # no owners: unowned
            "[ab].c      @alice",
        ]
    )
    parsed = codeowners.parse(text)
    assert [(p.line, p.message.split(":")[0]) for p in parsed.problems] == [
        (4, "!secret"),
        (5, "@org/team"),
        (5, "@nobody"),
        (5, "nobody@example.invalid"),
        (5, "not-an-owner"),
        (5, "@gone"),
        (7, "[ab].c"),
    ]
    assert parsed.owners_of("x.txt") == ("Alice",)
    assert parsed.owners_of("src/x.py") == ("Alice", "carol")  # the last match wins
    assert parsed.owners_of("docs/guide.md") == ()  # matched, but no known owner
    assert parsed.owners_of("vendor/lib.c") == ()


def test_garbage_never_raises():
    parsed = codeowners.parse("\x00\x01 @\n@@@ @\n" + "* " * 5000 + "\n\ud800 x")
    assert parsed.problems


def codeowners_on_main(scene, text: str, where: str = ".github/CODEOWNERS") -> str:
    scene.checkout("main")
    scene.commit("owners", {where: text})
    return scene.publish("main")


def test_read_takes_the_first_location_in_order(scene):
    scene.commit("owners", {"CODEOWNERS": "* @maint\n", "docs/CODEOWNERS": "* @bob\n"})
    tip = scene.publish("main")
    assert codeowners.read(scene.repo.disk_path, tip).path == "CODEOWNERS"
    scene.commit("github owners", {".github/CODEOWNERS": "* @alice\n"})
    tip = scene.publish("main")
    found = codeowners.read(scene.repo.disk_path, tip)
    assert found.path == ".github/CODEOWNERS" and found.owners_of("a.txt") == ("alice",)
    scene.commit("ours", {".hostsite/CODEOWNERS": "* @bob\n"})
    assert codeowners.read(scene.repo.disk_path, scene.publish("main")).owners_of("a.txt") == ("bob",)


def test_no_codeowners_and_a_binary_one(scene):
    tip = scene.tip("refs/heads/main")
    assert codeowners.read(scene.repo.disk_path, tip).path == ""
    (scene.work / "CODEOWNERS").write_bytes(b"* @maint\xff\xfe\n")
    scene.git("add", "CODEOWNERS")
    scene.commit("binary owners")
    found = codeowners.read(scene.repo.disk_path, scene.publish("main"))
    assert not found.rules and "not UTF-8" in found.problems[0].message


def test_the_branch_pages_report_problems_escaped(scene):
    codeowners_on_main(scene, "* @maint\n[x].c @maint\ndocs/ @bob @<script>alert(1)</script>\n")
    client = Client()
    for url in ("/owner/project", "/owner/project/tree/main"):
        page = client.get(url).content.decode()
        assert 'id="codeowners-problems"' in page, url
        assert "line 2: [x].c: character ranges" in page
        assert "@bob is not a maintainer, so cannot approve" in page  # a reader
        assert "<script>alert" not in page and "&lt;script&gt;" in page
    # Not on a subdirectory's listing, nor at a commit id.
    tip = scene.tip("refs/heads/main")
    assert "codeowners-problems" not in client.get("/owner/project/tree/main/.github").content.decode()
    assert "codeowners-problems" not in client.get(f"/owner/project/tree/{tip}").content.decode()


def test_a_clean_file_shows_nothing(scene):
    codeowners_on_main(scene, "* @maint\n")
    assert "codeowners-problems" not in Client().get("/owner/project/tree/main").content.decode()


def propose(scene, files):
    scene.checkout("feature", "main")
    scene.commit("feature", files)
    scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    return services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Change",
    )


def test_code_owners_are_asked_on_open_and_on_each_revision(scene):
    outsider = UserFactory(username="outsider")  # may not read the private repository
    scene.repo.visibility = "private"
    scene.repo.save()
    repo_services.membership_set(repo=scene.repo, user=scene.alice, role=Role.READER)
    carol = UserFactory(username="carol", email="carol@example.invalid")
    repo_services.membership_set(repo=scene.repo, user=carol, role=Role.MAINTAINER)
    codeowners_on_main(
        scene, "*.txt @maint @alice @outsider\nsrc/ carol@example.invalid\n", where="CODEOWNERS"
    )
    proposal = propose(scene, {"a.txt": "changed\n"})
    tasks.proposal_revised(proposal.revisions.get().pk)
    rows = list(ReviewRequest.objects.filter(proposal=proposal).values_list("user__username", "reason"))
    assert rows == [("maint", "codeowners")]  # not the author, not someone who cannot read it
    # A second revision touching src/ asks carol too; maint is not asked twice.
    scene.checkout("feature")
    scene.commit("more", {"src/x.c": "x\n"})
    head = scene.publish("feature", "refs/users/alice/feature")
    revision = services.revision_record(proposal=proposal, head=head)
    tasks.proposal_revised(revision.pk)
    assert sorted(
        ReviewRequest.objects.filter(proposal=proposal).values_list("user__username", flat=True)
    ) == [
        "carol",
        "maint",
    ]
    assert outsider.pk not in ReviewRequest.objects.values_list("user_id", flat=True)


def test_manual_review_requests(scene):
    proposal = propose(scene, {"b.txt": "b\n"})
    with pytest.raises(Exception, match="may request reviews"):
        review_requests.review_request(proposal=proposal, actor=scene.bob, username="maint")
    made = review_requests.review_request(proposal=proposal, actor=scene.alice, username="@bob")
    assert made is not None and made.requested_by == scene.alice and made.reason == "manual"
    assert review_requests.review_request(proposal=proposal, actor=scene.maint, username="bob") is None
    with pytest.raises(Exception, match="can read"):
        review_requests.review_request(proposal=proposal, actor=scene.maint, username="nobody")
    with pytest.raises(Exception, match="own proposal"):
        review_requests.review_request(proposal=proposal, actor=scene.maint, username="alice")


def test_review_request_form_and_api(scene):
    propose(scene, {"b.txt": "b\n"})
    client = Client()
    client.force_login(scene.alice)
    response = client.post("/owner/project/proposals/1/review-requests", {"username": "maint"}, follow=True)
    page = response.content.decode()
    assert "Review requested from maint." in page and 'id="review-requests"' in page
    secret = repo_services.token_create(user=scene.maint, scope="write")[1]
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    url = "/api/v1/repos/owner/project/proposals/1/review-requests"
    created = api.post(url, {"username": "bob"}, content_type="application/json")
    assert created.status_code == 201 and created.json()["requested_by"] == "maint"
    assert api.post(url, {"username": "bob"}, content_type="application/json").status_code == 200
    assert api.post(url, {"username": "ghost"}, content_type="application/json").status_code == 404
    listed = Client().get(url).json()
    assert [(r["username"], r["reason"]) for r in listed] == [("maint", "manual"), ("bob", "manual")]
