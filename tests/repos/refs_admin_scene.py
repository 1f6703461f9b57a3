"""A real bare repository whose refs are written on disk the way an import with `--refs all`
or a GitHub mirror leaves them, for the ref removal tests (tests/repos/test_refs_admin*.py)."""

from __future__ import annotations

from gitcore.git import run_git
from repos import services
from repos.models import Push, Role
from tests.factories import RepositoryFactory, UserFactory
from workspaces.models import ProtectedBranch

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


def make_scene() -> Scene:
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
