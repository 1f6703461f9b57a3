"""What a push that lands in the pusher's workspace prints next (post-receive, from what
reviews.access computed before git started), read from real `git push` output."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from repos.models import Push
from reviews import services
from reviews.following import proposals_follow_push
from tests import live
from tests.pushers import World

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

SITE = "https://git.example.test/forge/"


def hints(result) -> list[str]:
    """The lines post-receive and proc-receive print, without git's `remote: ` prefix."""
    lines = [line.strip() for line in result.stderr.splitlines()]
    return [line[len("remote: ") :].strip() for line in lines if line.startswith("remote: hostsite:")]


def test_direct_push_names_the_page_and_the_proposal_to_open(world):
    alice = world.add("alice")
    alice.commit("Fix the greeting\n\nIt said hello twice.")
    result = alice.push("HEAD:refs/users/alice/my-fix")
    assert result.returncode == 0, result.stderr
    base = f"http://{world.host}/owner/project"
    assert hints(result) == [
        f"hostsite: my-fix: {base}/workspaces/alice/my-fix",
        f"hostsite: open a proposal: {base}/proposals/new?ref=refs/users/alice/my-fix&target=main",
    ]
    # Following both links: the page of the ref, and the form prefilled from the commit.
    client = Client()
    client.force_login(alice.user)
    assert (
        client.get(f"{base}/workspaces/alice/my-fix".removeprefix(f"http://{world.host}")).status_code == 200
    )
    form = client.get(hints(result)[1].split(": ", 2)[2].removeprefix(f"http://{world.host}")).context["form"]
    assert form.initial["source_ref"] == "refs/users/alice/my-fix"
    assert form.initial["target_branch"] == "main"
    assert form.initial["title"] == "Fix the greeting"
    assert form.initial["description"] == "It said hello twice."


def test_branch_push_mapped_to_the_workspace_says_the_same(world):
    alice = world.add("alice")
    alice.git("checkout", "--quiet", "-b", "my-fix", check=True)
    alice.commit("fix")
    result = alice.git("push", alice.remote, "my-fix")
    assert result.returncode == 0, result.stderr
    base = f"http://{world.host}/owner/project"
    assert hints(result) == [
        "hostsite: refs/heads/my-fix landed in refs/users/alice/my-fix",
        f"hostsite: my-fix: {base}/workspaces/alice/my-fix",
        f"hostsite: open a proposal: {base}/proposals/new?ref=refs/users/alice/my-fix&target=main",
    ]
    # Several mapped branches: proc-receive's lines and ours make four.
    for name in ("b1", "b2", "b3"):
        alice.git("branch", name, check=True)
    result = alice.git("push", alice.remote, "b1", "b2", "b3")
    assert result.returncode == 0, result.stderr
    assert hints(result)[3:] == [f"hostsite: 3 refs: {base}/workspaces/alice"]


def test_a_copy_of_main_is_called_stale_instead_of_offered_a_proposal(world):
    alice = world.add("alice")
    base = f"http://{world.host}/owner/project"
    stale = "hostsite: stale: already on main, nothing to propose; clean it up on that page"
    # A direct push of a commit main has.
    result = alice.push("HEAD:refs/users/alice/main")
    assert result.returncode == 0, result.stderr
    assert hints(result) == [f"hostsite: main: {base}/workspaces/alice/main", stale]
    # Main moves on; alice pulls it and pushes her branches: her `main` maps to her workspace
    # (where her push sees refs/users/alice/main as refs/heads/main) and fast-forwards the copy.
    world.owner.commit("main moves on", name="other.txt")
    assert world.owner.push("main").returncode == 0
    assert alice.git("pull", "--quiet", "--ff-only", alice.remote, "main").returncode == 0
    result = alice.git("push", alice.remote, "main")
    assert result.returncode == 0, result.stderr
    assert hints(result) == [
        "hostsite: refs/heads/main landed in refs/users/alice/main",
        f"hostsite: main: {base}/workspaces/alice/main",
        stale,
    ]
    assert world.refs()["refs/users/alice/main"] == world.refs()["refs/heads/main"]
    # New work is offered a proposal as before.
    alice.commit("real work")
    result = alice.push("HEAD:refs/users/alice/main")
    assert hints(result)[1].startswith("hostsite: open a proposal:")


def test_links_follow_the_host_the_push_reached(world):
    alice = world.add("alice")
    alice.commit("work")
    port = world.host.rpartition(":")[2]
    result = alice.git("push", alice.remote.replace("@127.0.0.1:", "@localhost:"), "HEAD:refs/users/alice/w")
    assert result.returncode == 0, result.stderr
    assert hints(result)[0] == f"hostsite: w: http://localhost:{port}/owner/project/workspaces/alice/w"


def test_nameless_push_says_the_name_and_how_to_push_again(world):
    alice = world.add("alice")
    sha = alice.commit("nameless work")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    ref = f"refs/users/alice/main-{sha[:12]}"
    base = f"http://{world.host}/owner/project"
    assert hints(result) == [
        f"hostsite: refs/for/main landed in {ref}",
        f"hostsite: main-{sha[:12]}: {base}/workspaces/alice/main-{sha[:12]}",
        f"hostsite: open a proposal: {base}/proposals/new?ref={ref}&target=main",
        f"hostsite: push to it again: git push origin HEAD:{ref}",
    ]


def test_nameless_push_for_another_branch_targets_it(world):
    world.owner.git("push", world.owner.remote, "main:refs/heads/release/1.x", check=True)
    alice = world.add("alice")
    sha = alice.commit("backport")
    result = alice.push("HEAD:refs/for/release/1.x")
    assert result.returncode == 0, result.stderr
    ref = f"refs/users/alice/release-1.x-{sha[:12]}"
    assert f"proposals/new?ref={ref}&target=release/1.x" in "\n".join(hints(result))


def test_push_to_a_proposed_ref_names_the_proposal_and_its_next_revision(world):
    alice = world.add("alice")
    alice.commit("first try")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    proposal = services.proposal_open(
        repo=world.repo,
        user=alice.user,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="F",
    )
    alice.commit("second try")
    result = alice.push("HEAD:refs/users/alice/feature")
    assert result.returncode == 0, result.stderr
    url = f"http://{world.host}/owner/project/proposals/{proposal.number}"
    assert hints(result)[1] == f"hostsite: proposal #{proposal.number} updated: {url} (revision 2)"
    # The number it announced is the one the follower records.
    proposals_follow_push(push=Push.objects.filter(repository=world.repo).latest("id"))
    assert proposal.revisions.order_by("-number").first().number == 2


def test_two_refs_fit_and_many_are_summarised(world):
    alice = world.add("alice")
    alice.commit("work")
    result = alice.push("HEAD:refs/users/alice/one", "HEAD:refs/users/alice/two")
    assert result.returncode == 0, result.stderr
    assert [line.split(":")[1].strip() for line in hints(result)] == [
        "one",
        "open a proposal",
        "two",
        "open a proposal",
    ]


def test_nameless_push_advancing_a_proposed_head_names_the_proposal(world):
    alice = world.add("alice")
    sha = alice.commit("part one")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    ref = f"refs/users/alice/main-{sha[:12]}"
    proposal = services.proposal_open(
        repo=world.repo, user=alice.user, source_ref=ref, target_branch="main", title="P"
    )
    alice.commit("part two")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    url = f"http://{world.host}/owner/project/proposals/{proposal.number}"
    assert hints(result)[2:] == [
        f"hostsite: proposal #{proposal.number} updated: {url} (revision 2)",
        f"hostsite: push to it again: git push origin HEAD:{ref}",
    ]


def test_many_refs_stay_within_four_lines(world):
    alice = world.add("alice")
    alice.commit("work")
    result = alice.push(*(f"HEAD:refs/users/alice/r{i}" for i in range(6)))
    assert result.returncode == 0, result.stderr
    lines = hints(result)
    # The first ref's two lines, then the rest in one: a second ref's pair would make five.
    assert len(lines) == 3
    assert lines[0].startswith("hostsite: r0: ") and "open a proposal" in lines[1]
    assert lines[-1] == f"hostsite: and 5 more: http://{world.host}/owner/project/workspaces/alice"


def test_hostile_ref_names_print_as_escapes_and_encoded_urls(world):
    alice = world.add("alice")
    alice.commit("work")
    name = 'a&b#c%d"<é>$(x)'
    result = alice.push(f"HEAD:refs/users/alice/{name}")
    assert result.returncode == 0, result.stderr
    lines = hints(result)
    assert lines[0] == (
        f'hostsite: a&b#c%d"<\\u00e9>$(x): http://{world.host}/owner/project/workspaces/alice/'
        "a%26b%23c%25d%22%3C%C3%A9%3E%24%28x%29"
    )
    assert lines[1].endswith("?ref=refs/users/alice/a%26b%23c%25d%22%3C%C3%A9%3E%24%28x%29&target=main")
    assert all(re.fullmatch(r"[ -~]*", line) for line in lines)
    # The encoded link leads to that ref's page.
    client = Client()
    client.force_login(alice.user)
    page = client.get(lines[0].split(": ", 2)[2].removeprefix(f"http://{world.host}"))
    assert page.status_code == 200


def test_pushes_to_branches_and_other_peoples_work_print_nothing_new(world):
    world.owner.commit("maintainer work")
    result = world.owner.push("HEAD:main")
    assert result.returncode == 0, result.stderr
    assert hints(result) == []
    world.add("bob")
    result = world.owner.push("HEAD:refs/users/bob/help")
    assert result.returncode == 0, result.stderr
    assert hints(result) == []


@pytest.fixture(scope="module")
def site_web(live_env, tmp_path_factory):
    """A second web server with SITE_URL set, beside the session's."""
    port = live.free_port()
    web = live.start_web({**live_env, "SITE_URL": SITE}, port, tmp_path_factory.mktemp("site-url-web"))
    web.url = f"http://127.0.0.1:{port}"
    yield web
    web.stop()


def test_configured_site_url_wins_over_the_request_host(site_web, tmp_path, git_home):
    world = World(site_web.url, tmp_path, git_home)
    alice = world.add("alice")
    alice.commit("work")
    result = alice.push("HEAD:refs/users/alice/w")
    assert result.returncode == 0, result.stderr
    assert hints(result) == [
        f"hostsite: w: {SITE}owner/project/workspaces/alice/w",
        f"hostsite: open a proposal: {SITE}owner/project/proposals/new?ref=refs/users/alice/w&target=main",
    ]
