"""Reading what the Work view is made of out of git: refs (branches, tags by name, workspace
heads), the draft walk with its boundary (the bases), and the description of the commits shown.
showwork.selection decides what to show from them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from gitcore.git import run_git
from repos.hooks import refspace
from repos.models import Repository

FORMAT = "%m%H%x00%P%x00%h%x00%an%x00%ct%x00%s"


@dataclass(frozen=True)
class Head:
    ref: str
    sha: str
    when: int

    @property
    def owner(self) -> str:
        return self.ref.split("/", 3)[2]

    @property
    def label(self) -> str:
        return refspace.workspace_label(self.ref)


@dataclass
class Commit:
    sha: str
    parents: tuple[str, ...]
    abbrev: str
    author: str
    when: int
    subject: str


@dataclass(frozen=True)
class RefState:
    branches: dict[str, str]  # name -> commit
    tags: frozenset[str]
    heads: list[Head]
    branch_dates: dict[str, int] = field(default_factory=dict)  # name -> committer date


def read_refs(repo: Repository, user: str | None = None) -> RefState:
    """Branches and workspace heads with their types and dates; tags by name only. Asking a
    tag's type or date reads its object (through its delta chain): for 1,000 tags that was
    most of the cost of the one for-each-ref over everything, where a second process that
    only lists names costs about 2 ms; the two run at once."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        listing_tags = pool.submit(
            run_git, ["for-each-ref", "--format=%(refname)", "refs/tags/"], repo=repo.disk_path
        )
        # Names as pages and rows hold them (gitcore.gittools.text_refname: bytes that are not
        # UTF-8 as U+FFFD); git is only ever given the ids.
        out = _branches_and_heads(repo, user).decode("utf-8", "replace")
        tag_names = listing_tags.result().stdout
    branches: dict[str, str] = {}
    dates: dict[str, int] = {}
    heads: list[Head] = []
    for line in out.splitlines():
        kind, ref, sha, when = line.split("\0")
        if ref.startswith("refs/heads/"):
            if kind == "commit":
                branches[ref[len("refs/heads/") :]] = sha
                dates[ref[len("refs/heads/") :]] = int(when or 0)
        elif kind == "commit" and ref.count("/") >= 3:
            heads.append(Head(ref, sha, int(when or 0)))
    tags = frozenset(ref[len("refs/tags/") :] for ref in tag_names.decode("utf-8", "replace").splitlines())
    return RefState(branches, tags, heads, dates)


def _branches_and_heads(repo: Repository, user: str | None) -> bytes:
    return run_git(
        [
            "for-each-ref",
            "--format=%(objecttype)%00%(refname)%00%(objectname)%00%(committerdate:unix)",
            "refs/heads/",
            refspace.workspace_prefix(user) if user else refspace.WORKSPACES,
        ],
        repo=repo.disk_path,
    ).stdout


def parse_log(out: bytes) -> tuple[dict[str, Commit], dict[str, Commit]]:
    """(drafts, boundary) from `log --boundary --format=FORMAT`."""
    drafts: dict[str, Commit] = {}
    boundary: dict[str, Commit] = {}
    for line in out.decode("utf-8", "replace").split("\n"):
        if not line:
            continue
        mark, rest = line[0], line[1:]
        sha, parents, abbrev, author, when, subject = rest.split("\0", 5)
        commit = Commit(sha, tuple(parents.split()), abbrev, author, int(when or 0), subject)
        (boundary if mark == "-" else drafts)[sha] = commit
    return drafts, boundary


def walk_drafts(repo: Repository, heads: list[Head]) -> tuple[dict[str, Commit], dict[str, Commit]]:
    """(drafts, bases): the commits reachable from `heads` and from no branch or tag, and the
    walk's boundary, with their parents and dates only. Reading subjects and authors here
    made git read every draft's object (5,000 of them, where the cap shows 500): the commits
    shown are described afterwards, and the rest is what the commit-graph holds."""
    if not heads:
        return {}, {}
    out = run_git(
        ["rev-list", "--boundary", "--parents", "--timestamp", "--stdin", "--not", "--branches", "--tags"],
        repo=repo.disk_path,
        input="".join(sorted({h.sha + "\n" for h in heads})).encode(),
    ).stdout.decode()
    drafts: dict[str, Commit] = {}
    bases: dict[str, Commit] = {}
    for line in out.splitlines():
        when, sha, *parents = line.split(" ")
        if sha.startswith("-"):
            bases[sha[1:]] = Commit(sha[1:], tuple(parents), "", "", int(when), "")
        else:
            drafts[sha] = Commit(sha, tuple(parents), "", "", int(when), "")
    return drafts, bases


def describe(repo: Repository, shas: list[str]) -> dict[str, Commit]:
    """The shown commits with git's shortest unique abbreviation (and the tips' details)."""
    if not shas:
        return {}
    out = run_git(
        ["log", "--no-walk=unsorted", f"--format={FORMAT}", "--abbrev=4", "--stdin"],
        repo=repo.disk_path,
        input="".join(s + "\n" for s in shas).encode(),
    ).stdout
    return parse_log(out)[0]
