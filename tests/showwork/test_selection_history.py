"""Selection on a history shaped like a real project's, written with git fast-import: tags
every few commits (annotated and lightweight, on and off the branches, one on a blob), topic
branches merged into main, an old release branch and a maintained one that work lands on."""

from __future__ import annotations

import subprocess

import pytest
from django.contrib.auth.models import AnonymousUser

from showwork import lines as lines_module
from showwork.reading import read_refs
from showwork.selection import select
from tests.gitutil import git
from tests.showwork.lab import DAY, NOW, Lab

pytestmark = pytest.mark.django_db
HOUR = 3600
STEP = 6 * HOUR  # between commits of main's old history: release/1 is days older than release/2


def git_in(lab: Lab, *args: str, stdin: str) -> str:
    argv = ["git", "--git-dir", lab.bare, *args]
    return subprocess.run(argv, env=lab.env, input=stdin, capture_output=True, text=True, check=True).stdout


class Stream:
    """A fast-import stream of empty commits with fixed dates; marks become ids after import."""

    def __init__(self):
        self.parts: list[str] = []
        self.marks: dict[str, int] = {}

    def commit(self, name: str, ref: str, parents: list[str], at: int) -> str:
        self.marks[name] = len(self.marks) + 1
        stamp = f"Dev <dev@example.invalid> {at} +0000"
        msg = f"{name}\n"
        self.parts.append(f"commit {ref}\nmark :{self.marks[name]}\nauthor {stamp}\ncommitter {stamp}\n")
        self.parts.append(f"data {len(msg)}\n{msg}")
        for i, parent in enumerate(parents):
            self.parts.append(f"{'merge' if i else 'from'} :{self.marks[parent]}\n")
        self.parts.append("\n")
        return name

    def tag(self, tag: str, target: str, *, annotated: bool, at: int = NOW - 200 * DAY) -> None:
        if annotated:
            msg = f"Release {tag}\n"
            self.parts.append(
                f"tag {tag}\nfrom :{self.marks[target]}\ntagger Dev <dev@example.invalid> {at} +0000\n"
                f"data {len(msg)}\n{msg}\n"
            )
        else:
            self.parts.append(f"reset refs/tags/{tag}\nfrom :{self.marks[target]}\n\n")

    def ref(self, ref: str, target: str) -> None:
        self.parts.append(f"reset {ref}\nfrom :{self.marks[target]}\n\n")

    def write(self, lab: Lab) -> dict[str, str]:
        marks = lab.work.parent / "marks"
        git_in(
            lab,
            "fast-import",
            "--quiet",
            f"--export-marks={marks}",
            "--done",
            stdin="".join(self.parts) + "done\n",
        )
        by_mark = dict(line.split() for line in marks.read_text().splitlines())
        return {name: by_mark[f":{mark}"] for name, mark in self.marks.items()}


@pytest.fixture
def history(tmp_path, git_home) -> tuple[Lab, dict[str, str]]:
    """main m1..m60 (six-hourly from 100 days ago, the last ten in the last hours) with topic/old merged at m20 and dave's work
    merged at m57; release/1 forked at m10, last fixed at r1b (old); release/2 forked at m30,
    its tip r2b a merge of carol's work, recent. A tag every five commits of main, alternately
    annotated and lightweight; tags on both releases; `vendor` on x1, a commit on no branch;
    `snap` on frank's f1; a tag on a blob. Workspace heads from the last days."""
    lab = Lab(tmp_path, git_home)
    s = Stream()
    t0 = NOW - 100 * DAY
    main = "refs/heads/main"
    prev: list[str] = []
    for i in range(1, 61):
        at = t0 + i * STEP
        if i == 16:
            s.commit("t1", "refs/heads/topic/old", ["m15"], at - 30 * 60)
            s.commit("t2", "refs/heads/topic/old", ["t1"], at - 20 * 60)
        if i == 20:
            prev = [*prev, "t2"]
        if i == 57:
            prev = [*prev, "d1"]
        s.commit(f"m{i}", main, prev, at if i < 51 else NOW - (61 - i) * HOUR)
        prev = [f"m{i}"]
        if i % 5 == 0:
            s.tag(f"v0.{i}", f"m{i}", annotated=i % 10 == 0)
        if i == 10:
            s.commit("r1a", "refs/heads/release/1", ["m10"], at + 60)
            s.commit("r1b", "refs/heads/release/1", ["r1a"], at + 120)
            s.tag("v1.0.1", "r1b", annotated=False)
        if i == 30:
            s.commit("r2a", "refs/heads/release/2", ["m30"], at + 60)
            s.tag("v2.0.1", "r2a", annotated=True)
        if i == 40:
            s.commit("x1", "refs/heads/scratch", ["m40"], at + 60)
            s.tag("vendor", "x1", annotated=True)
        if i == 50:
            s.commit("d1", "refs/users/dave/landed-main", ["m50"], NOW - 12 * HOUR)
    s.commit("c1", "refs/users/carol/landed-release", ["r2a"], NOW - 3 * DAY)
    s.commit("r2b", "refs/heads/release/2", ["r2a", "c1"], NOW - 2 * DAY)
    s.commit("a1", "refs/users/alice/feature", ["m55"], NOW - 5 * HOUR)
    s.commit("a2", "refs/users/alice/feature", ["a1"], NOW - 4 * HOUR)
    s.commit("b1", "refs/users/bob/on-release", ["r2a"], NOW - 2 * DAY)
    s.commit("e1", "refs/users/erin/on-vendor", ["x1"], NOW - DAY)
    s.commit("f1", "refs/users/frank/tagged", ["m58"], NOW - 3 * HOUR)
    s.commit("f2", "refs/users/frank/tagged", ["f1"], NOW - 2 * HOUR)
    s.tag("snap", "f1", annotated=False)
    s.commit("g1", "refs/users/gina/old-release", ["r1b"], NOW - DAY)
    shas = s.write(lab)
    git(lab.env, "--git-dir", lab.bare, "update-ref", "-d", "refs/heads/scratch")
    blob = git_in(lab, "hash-object", "-w", "--stdin", stdin="x\n").strip()
    git(lab.env, "--git-dir", lab.bare, "update-ref", "refs/tags/a-blob", blob)
    git(lab.env, "--git-dir", lab.bare, "commit-graph", "write", "--reachable")
    return lab, shas


def drafts_of(graph) -> set[str]:
    return {n.sha for n in graph.nodes if n.kind == "draft"}


def test_shows_exactly_the_unfinished_commits(history):
    lab, s = history
    graph = select(lab.repo, viewer=AnonymousUser(), now=NOW)
    # Landed: dave's through a merge into main, carol's through a merge into release/2.
    # Tagged: frank's f1 (snap) and x1 (vendor) are public, so they are bases, not drafts.
    assert drafts_of(graph) == {s[n] for n in ("a1", "a2", "b1", "e1", "f2", "g1")}
    nodes = {n.sha: n for n in graph.nodes}
    assert nodes[s["e1"]].parents == ((s["x1"], 0),) and nodes[s["x1"]].kind == "base"
    assert nodes[s["f2"]].parents == ((s["f1"], 0),) and nodes[s["f1"]].kind == "base"
    assert nodes[s["b1"]].parents == ((s["r2a"], 0),)
    assert nodes[s["g1"]].parents == ((s["r1b"], 0),) and nodes[s["r1b"]].kind == "tip"
    # release/2's line: its tip, then the base its work left from.
    assert nodes[s["r2b"]].labels == ("release/2",) and nodes[s["r2b"]].parents == ((s["r2a"], 0),)
    assert {s["c1"], s["d1"]}.isdisjoint(nodes)
    # The oracle: git itself, one head at a time.
    expected = set()
    for head in read_refs(lab.repo).heads:
        out = git(
            lab.env, "--git-dir", lab.bare, "rev-list", head.sha, "--not", "--branches", "--tags"
        ).stdout
        expected |= set(out.split())
    assert drafts_of(graph) == expected


def test_old_branch_lines_are_not_walked_and_the_graph_is_the_same(history, monkeypatch):
    """Without gina's work on release/1, the oldest base is younger than release/1's and
    topic/old's tips: their lines are left out of the walk, and the graph is what walking
    them gave (their tips shown, unplaced)."""
    lab, s = history
    lab.delete("refs/users/gina/old-release")
    walked = []
    real = lines_module.run_git

    def spy(args, **kwargs):
        if args[0] == "rev-list":
            walked.append(set(kwargs["input"].decode().split()))
        return real(args, **kwargs)

    monkeypatch.setattr(lines_module, "run_git", spy)
    graph = select(lab.repo, viewer=AnonymousUser(), now=NOW)
    assert walked[-1] == {s["m60"], s["r2b"]}  # main and release/2; not release/1, topic/old
    nodes = {n.sha: n for n in graph.nodes}
    assert nodes[s["r1b"]].kind == "tip" and nodes[s["r1b"]].parents == ()
    assert nodes[s["t2"]].labels == ("topic/old",)

    monkeypatch.setattr(lines_module, "CLOCK_SKEW", 10**10)  # every line walked, as before
    everything = select(lab.repo, viewer=AnonymousUser(), now=NOW)
    assert walked[-1] == {s["m60"], s["r2b"], s["r1b"], s["t2"]}
    assert everything.nodes == graph.nodes


def test_branch_filter_on_the_release_branches(history):
    lab, s = history
    on_release2 = select(lab.repo, viewer=AnonymousUser(), branch="release/2", now=NOW)
    assert drafts_of(on_release2) == {s["b1"]}
    on_release1 = select(lab.repo, viewer=AnonymousUser(), branch="release/1", now=NOW)
    assert drafts_of(on_release1) == {s["g1"]}
    on_main = select(lab.repo, viewer=AnonymousUser(), branch="main", now=NOW)
    # x1 (vendor) and f1 (snap) are public through tags only, on no branch.
    assert drafts_of(on_main) == {s["a1"], s["a2"]}
