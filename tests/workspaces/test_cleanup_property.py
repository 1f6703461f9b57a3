"""A property of merged-ref cleanup, over random histories: whatever contributors push and
however maintainers land it (fast-forward, merge commit, rebase, squash, a partial
cherry-pick), cleanup never makes a commit unreachable from every ref, and only deletes refs
whose work is really on the branch: merging such a ref into the branch changes nothing.

Real git, real repositories; pushes are made by updating the hosted repository and recording
them with repos.pushes.push_record, as the smart HTTP path does after receive-pack."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from repos import services
from repos.models import Push
from repos.pushes import Update, push_record
from tests.factories import UserFactory
from workspaces import cleanup
from workspaces.models import ArchivedRef

pytestmark = pytest.mark.django_db

USERS = ["alice", "bob"]
NAMES = ["a", "b", "c"]
ZERO = "0" * 40

work_op = st.tuples(
    st.just("work"), st.sampled_from(USERS), st.sampled_from(NAMES), st.integers(1, 3), st.booleans()
)  # on top of the existing ref, or fresh from main
land_op = st.tuples(
    st.just("land"),
    st.sampled_from(USERS),
    st.sampled_from(NAMES),
    st.sampled_from(["ff", "merge", "rebase", "squash", "partial"]),
)
main_op = st.tuples(st.just("main"))
operations = st.lists(st.one_of(work_op, work_op, land_op, land_op, main_op), min_size=3, max_size=10)


class History:
    def __init__(self, tmp_path, env):
        self.env = env
        tag = uuid.uuid4().hex[:8]
        self.owner = UserFactory(username=f"owner{tag}")
        self.users = {name: UserFactory(username=f"{name}{tag}") for name in USERS}
        self.repo = services.repository_create(owner=self.owner, name=f"prop{tag}")
        self.hosted = self.repo.disk_path
        self.work = tmp_path / f"work-{tag}"
        self.git("init", "--quiet", "-b", "main", str(self.work), cwd=None)
        self.serial = 0
        self.commit("base")
        self.push(self.owner, "main", "refs/heads/main")

    def git(self, *args, cwd="work", check=True) -> str:
        argv = ["git", *(["-C", str(self.work)] if cwd == "work" else []), *args]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, check=check).stdout.strip()

    def ok(self, *args) -> bool:
        return (
            subprocess.run(["git", "-C", str(self.work), *args], env=self.env, capture_output=True).returncode
            == 0
        )

    def hosted_git(self, *args, check=True) -> str:
        return self.git("--git-dir", str(self.hosted), *args, cwd=None, check=check)

    def commit(self, message: str) -> str:
        self.serial += 1
        # A file of its own per commit: histories never conflict, so every landing applies.
        (self.work / f"f{self.serial}.txt").write_text(f"{message} {self.serial}\n")
        self.git("add", "-A")
        self.git("commit", "--quiet", "-m", f"{message} {self.serial}")
        return self.git("rev-parse", "HEAD")

    def refs(self, *patterns) -> dict[str, str]:
        out = self.hosted_git("for-each-ref", "--format=%(refname) %(objectname)", *patterns)
        return dict(line.split(" ", 1) for line in out.splitlines())

    def push(self, user, local: str, ref: str) -> Push:
        old = self.refs(ref).get(ref, ZERO)
        self.hosted_git("fetch", "--quiet", str(self.work), f"+{local}:{ref}")
        new = self.refs(ref)[ref]
        return push_record(repo=self.repo, pusher=user, updates=[Update(old, new, ref)])

    def ws(self, user: str, name: str) -> str:
        return f"refs/users/{self.users[user].username}/{name}"

    def do_work(self, user, name, n, on_top):
        ref = self.ws(user, name)
        start = self.refs(ref).get(ref) if on_top else None
        self.git(
            "fetch",
            "--quiet",
            str(self.hosted),
            "+refs/heads/main:refs/remotes/h/main",
            *([f"+{ref}:refs/remotes/h/ws"] if start else []),
        )
        self.git("checkout", "--quiet", "-B", "work", "refs/remotes/h/ws" if start else "refs/remotes/h/main")
        for i in range(n):
            self.commit(f"{user} {name} {i}")
        self.push(self.users[user], "work", ref)

    def do_land(self, user, name, how):
        ref = self.ws(user, name)
        tip = self.refs(ref).get(ref)
        if tip is None:
            return None
        self.git(
            "fetch",
            "--quiet",
            str(self.hosted),
            "+refs/heads/main:refs/remotes/h/main",
            f"+{ref}:refs/remotes/h/ws",
        )
        self.git("checkout", "--quiet", "-B", "main", "refs/remotes/h/main")
        own = self.git(
            "rev-list", "--reverse", "--no-merges", "refs/remotes/h/ws", "^refs/remotes/h/main"
        ).split()
        if not own:
            return None
        if how == "ff":
            if not self.ok("merge-base", "--is-ancestor", "refs/remotes/h/main", "refs/remotes/h/ws"):
                return None  # main moved on: no fast-forward possible
            self.git("merge", "--ff-only", "--quiet", "refs/remotes/h/ws")
        elif how == "merge":
            self.git("merge", "--no-ff", "--quiet", "-m", "merge", "refs/remotes/h/ws")
        elif how == "rebase":
            # A commit whose file an earlier landing already brought to main becomes empty:
            # keep it (as an empty commit) rather than stop the cherry-pick.
            self.git("cherry-pick", "--keep-redundant-commits", *own)
        elif how == "squash":
            self.git("merge", "--squash", "--quiet", "refs/remotes/h/ws")
            self.git("commit", "--quiet", "--allow-empty", "-m", "squashed")
        elif how == "partial":
            self.git("cherry-pick", "--keep-redundant-commits", own[0])
        return cleanup.cleanup_after_push(self.push(self.owner, "main", "refs/heads/main"))

    def do_main(self):
        self.git("fetch", "--quiet", str(self.hosted), "+refs/heads/main:refs/remotes/h/main")
        self.git("checkout", "--quiet", "-B", "main", "refs/remotes/h/main")
        self.commit("main moves")
        cleanup.cleanup_after_push(self.push(self.owner, "main", "refs/heads/main"))

    def reachable(self) -> set[str]:
        return set(self.hosted_git("rev-list", "--all").split())

    def workspace_commits(self) -> set[str]:
        return set(self.hosted_git("rev-list", "--glob=refs/users/*").split())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_cleanup_never_loses_work_and_deletes_only_landed_refs(ops, tmp_path, git_home):
    h = History(tmp_path, git_home)
    for op in ops:
        if op[0] == "work":
            h.do_work(*op[1:])  # a contributor may drop their own commits by force-pushing
            continue
        before = h.workspace_commits()
        if op[0] == "land":
            h.do_land(*op[1:])
        else:
            h.do_main()
        # Nothing that was in a workspace became unreachable from every ref.
        assert before <= h.reachable()
    archived = ArchivedRef.objects.filter(repository=h.repo)
    event(f"refs archived: {min(archived.count(), 2)}{'+' if archived.count() > 2 else ''}")
    main = h.refs("refs/heads/main")["refs/heads/main"]
    main_tree = h.hosted_git("rev-parse", f"{main}^{{tree}}")
    for row in archived:
        assert h.refs(row.archive_ref)[row.archive_ref] == row.sha
        # Its work is on main: merging it there changes nothing.
        merged_tree = h.hosted_git("merge-tree", "--write-tree", main, row.sha).split()[0]
        assert merged_tree == main_tree, (row.ref, row.how, ops)
