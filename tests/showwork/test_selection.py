"""Selection on crafted repositories: which commits the Work view shows, with exact graphs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser

from repos import services as repo_services
from repos.models import Role
from reviews.models import Proposal
from showwork.selection import select
from tests.factories import UserFactory
from tests.showwork.lab import DAY, NOW, Lab, text
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(tmp_path, git_home) -> Lab:
    """main: A-B-C-D-E; alice/topic: a1-a2 on B; bob's nameless head for main: b1 on D;
    carol/old: c1 on C, 40 days old; dave/landed: at C (already on main)."""
    lab = Lab(tmp_path, git_home)
    lab.shas = {}
    for name in "ABCDE":
        lab.shas[name] = lab.commit(f"main {name}", at=NOW - (10 - "ABCDE".index(name)) * DAY)
    lab.publish("refs/heads/main")
    lab.at(lab.shas["B"])
    lab.shas["a1"] = lab.commit("alice one", at=NOW - 3 * DAY)
    lab.shas["a2"] = lab.commit("alice two", at=NOW - 2 * DAY)
    lab.publish("refs/users/alice/topic")
    lab.at(lab.shas["D"])
    lab.shas["b1"] = lab.commit("bob nameless", at=NOW - DAY)
    lab.publish("refs/users/bob/main-0123456789ab")
    lab.at(lab.shas["C"])
    lab.shas["c1"] = lab.commit("carol old", at=NOW - 40 * DAY)
    lab.publish("refs/users/carol/old")
    lab.publish("refs/users/dave/landed", lab.shas["C"])
    return lab


def anon():
    return AnonymousUser()


def test_default_view_exact_graph(lab):
    graph = select(lab.repo, viewer=anon(), now=NOW)
    s = {k: v for k, v in lab.shas.items()}
    w = len(graph.nodes[0].short)
    assert w >= 4
    assert [n.sha for n in graph.nodes] == [s["E"], s["b1"], s["D"], s["a2"], s["a1"], s["B"]]
    assert text(graph) == (
        f"o  {s['E'][:w]}  main E  main\n"
        f"| @  {s['b1'][:w]}  bob nameless (bob, 1 day)  bob/main-0123456789ab\n"
        f"|/\n"
        f"o  {s['D'][:w]}  main D\n"
        f":  (1 commit)\n"
        f": @  {s['a2'][:w]}  alice two (alice, 2 days)  alice/topic\n"
        f": *  {s['a1'][:w]}  alice one (alice, 3 days)\n"
        f":/\n"
        f"o  {s['B'][:w]}  main B\n"
    )
    by_sha = {n.sha: n for n in graph.nodes}
    assert by_sha[s["D"]].parents == ((s["B"], 1),)  # C is skipped
    assert by_sha[s["E"]].parents == ((s["D"], 0),)
    assert by_sha[s["a1"]].parents == ((s["B"], 0),)
    assert by_sha[s["E"]].kind == "tip" and by_sha[s["B"]].kind == "base"
    assert by_sha[s["a2"]].url == f"/owner/project/commit/{s['a2']}"
    assert graph.more == 0


def test_show_older_includes_stale_heads(lab):
    graph = select(lab.repo, viewer=anon(), since=None, now=NOW)
    shas = {n.sha for n in graph.nodes}
    assert lab.shas["c1"] in shas and lab.shas["C"] in shas
    # dave's ref is on main already: nothing unfinished, no node of its own.
    assert not any("dave/landed" in n.labels for n in graph.nodes)
    c = next(n for n in graph.nodes if n.sha == lab.shas["C"])
    assert c.parents == ((lab.shas["B"], 0),)


def test_my_work_filter(lab):
    graph = select(lab.repo, viewer=anon(), user="alice", now=NOW)
    assert {n.sha for n in graph.nodes if n.kind == "draft"} == {lab.shas["a1"], lab.shas["a2"]}
    assert {n.owner for n in graph.nodes if n.kind == "draft"} == {"alice"}


def test_branch_filter(lab):
    # A release branch from A: alice's base B is on main only, bob's nameless head targets main.
    lab.at(lab.shas["A"])
    lab.shas["R"] = lab.commit("release R", at=NOW - 9 * DAY)
    lab.publish("refs/heads/release")
    lab.shas["r1"] = lab.commit("erin on release", at=NOW - DAY)
    lab.publish("refs/users/erin/fix")
    on_main = select(lab.repo, viewer=anon(), branch="main", now=NOW)
    drafts = {n.sha for n in on_main.nodes if n.kind == "draft"}
    assert drafts == {lab.shas["a1"], lab.shas["a2"], lab.shas["b1"]}
    on_release = select(lab.repo, viewer=anon(), branch="release", now=NOW)
    assert {n.sha for n in on_release.nodes if n.kind == "draft"} == {lab.shas["r1"]}
    assert not [n for n in select(lab.repo, viewer=anon(), branch="nope", now=NOW).nodes if n.kind == "draft"]


def test_cap_keeps_newest_stacks_and_counts_the_rest(lab):
    graph = select(lab.repo, viewer=anon(), cap=1, now=NOW)
    assert {n.sha for n in graph.nodes if n.kind == "draft"} == {lab.shas["b1"]}
    assert graph.more == 2


def test_hidden_workspace_invisible_to_others(lab):
    alice = UserFactory(username="alice")
    Workspace.objects.create(repository=lab.repo, user=alice, hidden=True)

    def drafts(viewer):
        return {n.sha for n in select(lab.repo, viewer=viewer, now=NOW).nodes if n.kind == "draft"}

    assert lab.shas["a1"] not in drafts(anon())
    assert lab.shas["a1"] not in drafts(UserFactory(username="mallory"))
    assert lab.shas["a1"] in drafts(alice)
    admin = UserFactory(username="adm")
    repo_services.membership_set(repo=lab.repo, user=admin, role=Role.ADMIN)
    assert lab.shas["a1"] in drafts(admin)


def test_open_proposal_is_the_heads_link(lab):
    alice = UserFactory(username="alice")
    Proposal.objects.create(
        repository=lab.repo,
        number=3,
        author=alice,
        source_ref="refs/users/alice/topic",
        target_branch="main",
        title="T",
    )
    graph = select(lab.repo, viewer=anon(), now=NOW)
    head = next(n for n in graph.nodes if n.sha == lab.shas["a2"])
    assert head.url == "/owner/project/proposals/3"
    below = next(n for n in graph.nodes if n.sha == lab.shas["a1"])
    assert below.url.endswith(lab.shas["a1"])


def test_merge_in_drafts_and_stacked_heads(tmp_path, git_home):
    lab = Lab(tmp_path, git_home)
    m = lab.commit("M", at=NOW - 5 * DAY)
    lab.publish("refs/heads/main")
    x1 = lab.commit("x1", at=NOW - 4 * DAY)
    lab.publish("refs/users/xena/low")
    x2 = lab.commit("x2", at=NOW - 3 * DAY)
    lab.at(m)
    y1 = lab.commit("y1", at=NOW - 3 * DAY)
    lab.git("merge", "--quiet", "--no-ff", "-m", "merge x2", x2)
    lab.publish("refs/users/xena/top")
    merge = lab.git("rev-parse", "HEAD").stdout.strip()
    graph = select(lab.repo, viewer=anon(), now=NOW)
    nodes = {n.sha: n for n in graph.nodes}
    assert set(nodes) == {m, x1, x2, y1, merge}
    assert nodes[merge].parents == ((y1, 0), (x2, 0))
    assert nodes[x1].labels == ("xena/low",) and nodes[merge].labels == ("xena/top",)
    order = [n.sha for n in graph.nodes]
    assert order.index(merge) < order.index(x2) < order.index(x1) < order.index(m)
    assert order.index(y1) < order.index(m)


def test_since_window(lab):
    graph = select(lab.repo, viewer=anon(), since=timedelta(hours=36), now=NOW)
    assert {n.sha for n in graph.nodes if n.kind == "draft"} == {lab.shas["b1"]}


def test_base_inside_a_merged_side_branch_joins_the_line(tmp_path, git_home):
    lab = Lab(tmp_path, git_home)
    m0 = lab.commit("M0", at=NOW - 9 * DAY)
    s1 = lab.commit("S1", at=NOW - 8 * DAY)
    lab.commit("S2", at=NOW - 7 * DAY)
    side = lab.git("rev-parse", "HEAD").stdout.strip()
    lab.at(m0)
    lab.commit("M1", at=NOW - 6 * DAY)
    lab.git("merge", "--quiet", "--no-ff", "-m", "merge side", side)
    tip = lab.publish("refs/heads/main")
    lab.at(s1)
    d1 = lab.commit("d1", at=NOW - DAY)
    lab.publish("refs/users/zoe/side-fix")
    graph = select(lab.repo, viewer=anon(), now=NOW)
    nodes = {n.sha: n for n in graph.nodes}
    assert set(nodes) == {tip, s1, d1}
    assert nodes[d1].parents == ((s1, 0),)
    # main^2~1: two steps along the path name-rev found, one commit skipped in between.
    assert nodes[tip].parents == ((s1, 1),)
    assert [n.sha for n in graph.nodes] == [tip, d1, s1]


def test_a_branch_line_joins_main_where_it_forked(lab):
    lab.at(lab.shas["C"])
    r1 = lab.commit("release one", at=NOW - 4 * DAY)
    r2 = lab.commit("release two", at=NOW - 3 * DAY)
    lab.publish("refs/heads/release")
    lab.at(r1)
    f1 = lab.commit("fix for release", at=NOW - DAY)
    lab.publish("refs/users/erin/fix")
    nodes = {n.sha: n for n in select(lab.repo, viewer=anon(), now=NOW).nodes}
    s = lab.shas
    assert nodes[r2].parents == ((r1, 0),) and nodes[f1].parents == ((r1, 0),)
    assert nodes[r1].parents == ((s["B"], 1),)  # C, where release forked, is skipped
    assert nodes[s["E"]].parents == ((s["D"], 0),) and nodes[s["D"]].parents == ((s["B"], 1),)
    assert nodes[r2].labels == ("release",) and nodes[r2].kind == "tip"
