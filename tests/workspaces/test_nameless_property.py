"""A property of nameless pushes, over random sequences of what contributors and maintainers do:
nameless pushes of new work, of work on top of earlier heads (nameless, restored, topic or
plainly pushed ones), topic pushes, pushes for another branch, plain pushes to workspace refs,
merges into main (then merged-ref cleanup), restores of what cleanup archived, and main moving.

Nameless advancement never moves a ref whose work was merged, that was restored, that a plain
push created, or that belongs to another branch or topic; every push of unrelated work gets a
new ref; a topic ref is never taken over for work that landed or another branch's work.

Real git: each push runs receive-pack on the hosted repository with the real hooks
(pre-receive, proc-receive, post-receive), the configuration and the environment the smart HTTP
view gives it, and is recorded from the updates file as that view does."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gitcore import hooksocket
from repos import gitaccess, pipeline, pushes, services
from repos.errors import Conflict
from repos.gitaccess import GitClient
from repos.gitprotocol import Pusher
from repos.models import Role
from repos.pipeline.push import hook_handlers
from repos.selectors import role_for
from tests.factories import UserFactory
from workspaces import cleanup
from workspaces.models import ArchivedRef

pytestmark = pytest.mark.django_db

USERS = ["alice", "bob"]
BRANCHES = ["main", "release"]
TOPICS = ["t1", "t2"]
ZERO = "0" * 40
LANDED = re.compile(r"hostsite: (refs/for/\S+) landed in (\S+)")

new_op = st.tuples(st.just("new"), st.sampled_from(USERS), st.sampled_from(BRANCHES))
build_op = st.tuples(
    st.just("build"), st.sampled_from(USERS), st.integers(0, 7), st.booleans()
)  # for the branch the ref was proposed for, or the other one
topic_op = st.tuples(
    st.just("topic"),
    st.sampled_from(USERS),
    st.sampled_from(BRANCHES),
    st.sampled_from(TOPICS),
    st.booleans(),
)  # on top of the topic's ref, or fresh from the branch
plain_op = st.tuples(st.just("plain"), st.sampled_from(USERS), st.booleans())  # a nameless-shaped name or not
merge_op = st.tuples(st.just("merge"), st.integers(0, 15), st.booleans())  # and its owner restores it
restore_op = st.tuples(st.just("restore"), st.integers(0, 7))
main_op = st.tuples(st.just("main"))
operations = st.lists(
    st.one_of(
        new_op,
        new_op,
        build_op,
        build_op,
        build_op,
        topic_op,
        plain_op,
        merge_op,
        merge_op,
        restore_op,
        main_op,
    ),
    min_size=3,
    max_size=9,
)


class Hosted:
    """One repository, its contributors and a working copy; pushes as the smart HTTP view runs them."""

    def __init__(self, tmp_path: Path, env: dict[str, str], branches=tuple(BRANCHES)):
        self.env = env
        tag = uuid.uuid4().hex[:8]
        self.owner = UserFactory(username=f"owner{tag}")
        self.users = {name: UserFactory(username=f"{name}{tag}") for name in USERS}
        self.repo = services.repository_create(owner=self.owner, name=f"nameless{tag}")
        self.path = self.repo.disk_path
        self.work = tmp_path / f"work-{tag}"
        self.serial = 0
        self.git("init", "--quiet", "-b", "main", str(self.work), cwd=None)
        self.commit("base")
        for branch in branches:
            self.push(self.owner, f"refs/heads/{branch}")
        # What the hosting platform wrote, by ref: the branch of the refs/for push that last
        # wrote it, and which refs a plain push created or a restore brought back.
        self.proposed_for: dict[str, str] = {}
        self.plain: set[str] = set()
        self.restored: set[str] = set()

    def git(self, *args, cwd="work", check=True, env=None) -> str:
        argv = ["git", *(["-C", str(self.work)] if cwd == "work" else []), *args]
        return subprocess.run(
            argv, env=env or self.env, capture_output=True, text=True, check=check
        ).stdout.strip()

    def hosted(self, *args, check=True) -> str:
        return self.git("--git-dir", str(self.path), *args, cwd=None, check=check)

    def ancestor(self, a: str, b: str) -> bool:
        argv = ["git", "--git-dir", str(self.path), "merge-base", "--is-ancestor", a, b]
        return subprocess.run(argv, env=self.env, capture_output=True).returncode == 0

    def refs(self) -> dict[str, str]:
        out = self.hosted("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/", "refs/users/")
        return dict(line.split(" ", 1) for line in out.splitlines())

    def commit(self, message: str) -> str:
        self.serial += 1
        (self.work / f"f{self.serial}.txt").write_text(f"{message} {self.serial}\n")
        self.git("add", "-A")
        # Dates of their own: the same example makes the same commits, and heads sort by date.
        date = f"{1_700_000_000 + 60 * self.serial} +0000"
        self.git(
            "commit",
            "--quiet",
            "-m",
            f"{message} {self.serial}",
            env={**self.env, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
        )
        return self.git("rev-parse", "HEAD")

    def start_at(self, rev: str) -> None:
        self.git(
            "fetch",
            "--quiet",
            "--prune",  # a ref deleted there may be a directory here now (refs/users/u/x/y, then x)
            str(self.path),
            "+refs/heads/*:refs/remotes/h/*",
            "+refs/users/*:refs/remotes/u/*",
        )
        self.git("checkout", "--quiet", "--detach", rev)

    def push(self, user, ref: str, options=(), source: str = "HEAD") -> tuple[int, str]:
        """`git push <source>:<ref>` as `user` (no source: a deletion): receive-pack with the
        view's config and hook environment, then the push recorded from what post-receive wrote."""
        role = role_for(user, self.repo)
        pusher = Pusher(user=user, role=role)
        # "+HEAD": a forced push (git's own check compares with the branch it was shown).
        new = self.git("rev-parse", source.lstrip("+")) if source else ZERO
        old = ZERO if ref.startswith("refs/for/") else self.refs().get(ref, ZERO)
        fd, updates = tempfile.mkstemp(prefix="hostsite-push-", suffix=".refs")
        os.close(fd)
        try:
            # A git client's request (not a web write): branch pushes of contributors are mapped.
            call = pipeline.GitCall(self.repo, "receive-pack", pusher, None, client=GitClient())
            req = call.git_request([(old, new, ref)])
            config = gitaccess.git_config(req, advertise=False, refs=[ref])
            receive_pack = shlex.join(
                ["git", *(f for k, v in config for f in ("-c", f"{k}={v}")), "receive-pack"]
            )
            push_env = {
                **gitaccess.hook_env(req),
                "HOSTSITE_PUSHER": user.username,
                "HOSTSITE_PUSHER_ID": str(user.pk),
                "HOSTSITE_ROLE": pusher.role_label,
                "HOSTSITE_REPO_ID": str(self.repo.pk),
                "HOSTSITE_REF_UPDATES_FILE": updates,
            }
            # The hooks that decide are answered here, as the pipeline has them answered.
            hooks = hooksocket.register(self.path, push_env, hook_handlers())
            env = {**self.env, **push_env, **hooks}
            argv = [
                "git",
                "-C",
                str(self.work),
                "push",
                "--porcelain",
                f"--receive-pack={receive_pack}",
                *(f for option in options for f in ("-o", option)),
                str(self.path),
                f"{source}:{ref}",
            ]
            result = subprocess.run(argv, env=env, capture_output=True, text=True)
            hooksocket.unregister(hooks)
            text = Path(updates).read_text()
        finally:
            os.unlink(updates)
        recorded = pushes.parse_updates(text)
        self.last_push = None
        if recorded:
            self.last_push = pushes.push_record(
                repo=self.repo, pusher=user, updates=recorded, push_options=pushes.parse_push_options(text)
            )
        return result.returncode, result.stdout + result.stderr

    def workspace(self, user: str) -> list[str]:
        prefix = f"refs/users/{self.users[user].username}/"
        return sorted(ref for ref in self.refs() if ref.startswith(prefix))

    # --- nameless pushes and what must hold for each -----------------------------------------------

    def propose(self, user: str, branch: str, *, built_on: str | None = None, topic: str | None = None):
        before = self.refs()
        new = self.git("rev-parse", "HEAD")
        branch_tip = before[f"refs/heads/{branch}"]
        target = f"refs/for/{branch}" + (f"/{topic}" if topic else "")
        code, out = self.push(self.users[user], target)
        after = self.refs()
        landed = dict(LANDED.findall(out))
        if code != 0:
            assert target not in landed and after == before, (out, before, after)
            if topic is None or self.ancestor(new, branch_tip):
                assert self.ancestor(new, branch_tip) and "no new changes" in out, out
            else:
                # A topic ref whose work landed, that was restored, or another branch's.
                ref = f"refs/users/{self.users[user].username}/{topic}"
                assert ref in before, out
                assert (
                    ref in self.restored
                    or self.ancestor(before[ref], branch_tip)
                    or self.proposed_for.get(ref, branch) != branch
                ), out
            event("refused")
            return None
        ref = landed[target]
        assert after[ref] == new
        changed = {r for r in set(before) | set(after) if before.get(r) != after.get(r)}
        assert changed <= {ref}, changed  # nothing else moved
        old = before.get(ref)
        if old is not None and old != new:
            # Moved an existing ref: never one whose work landed, restored or plainly pushed,
            # nor another branch's or topic's.
            assert ref not in self.restored and ref not in self.plain, (ref, out)
            assert not self.ancestor(old, branch_tip), ("merged ref moved", ref)
            assert self.proposed_for.get(ref, branch) == branch, ("another branch's ref moved", ref)
            if topic is None:
                assert self.proposed_for.get(ref) == branch and self.ancestor(old, new), ref
                assert ref.startswith(f"refs/users/{self.users[user].username}/{branch}-"), ref
            else:
                assert ref.endswith(f"/{topic}")
            event("advanced" if topic is None else "topic moved")
        elif old is None:
            event("new ref")
        if topic is None and built_on is None:
            assert old is None, ("unrelated work advanced a ref", ref, out)
        self.proposed_for[ref] = branch
        self.plain.discard(ref)
        return ref

    def do_new(self, user, branch):
        self.start_at(f"refs/remotes/h/{branch}")
        self.commit(f"{user} new for {branch}")
        self.propose(user, branch)

    def do_build(self, user, k, same_branch):
        refs = self.workspace(user)
        if not refs:
            return
        ref = refs[k % len(refs)]
        branch = self.proposed_for.get(ref, "main")
        if not same_branch:
            branch = next(b for b in BRANCHES if b != branch)
        self.start_at(ref.replace("refs/users/", "refs/remotes/u/", 1))
        self.commit(f"{user} on {ref}")
        self.propose(user, branch, built_on=ref)

    def do_topic(self, user, branch, topic, on_top):
        ref = f"refs/users/{self.users[user].username}/{topic}"
        start = ref.replace("refs/users/", "refs/remotes/u/", 1) if on_top and ref in self.refs() else None
        self.start_at(start or f"refs/remotes/h/{branch}")
        self.commit(f"{user} topic {topic}")
        self.propose(user, branch, built_on=start, topic=topic)

    def do_plain(self, user, shaped):
        self.start_at("refs/remotes/h/main")
        sha = self.commit(f"{user} plain")
        name = f"main-{sha[:12]}" if shaped else f"named-{self.serial}"
        ref = f"refs/users/{self.users[user].username}/{name}"
        code, out = self.push(self.users[user], ref)
        assert code == 0, out
        self.plain.add(ref)
        self.proposed_for.pop(ref, None)

    def do_merge(self, k, restore):
        refs = sorted(ref for ref in self.refs() if ref.startswith("refs/users/"))
        if not refs:
            return
        ref = refs[k % len(refs)]
        self.start_at("refs/remotes/h/main")
        self.git(
            "merge",
            "--no-ff",
            "--quiet",
            "-m",
            f"merge {ref}",
            ref.replace("refs/users/", "refs/remotes/u/", 1),
        )
        code, out = self.push(self.owner, "refs/heads/main")
        assert code == 0, out
        if self.last_push is not None:  # merging what main already has changes nothing
            archived = cleanup.cleanup_after_push(self.last_push)
            if restore and archived:
                self.do_restore(0, archived)

    def do_restore(self, k, rows=None):
        rows = rows or list(
            ArchivedRef.objects.filter(repository=self.repo, state=ArchivedRef.State.ARCHIVED).order_by("pk")
        )
        if not rows:
            return
        row = rows[k % len(rows)]
        owner = next(u for u in self.users.values() if u.username == row.username)
        try:
            ref = cleanup.restore(row, user=owner)
        except Conflict:
            return
        self.restored.add(ref)
        event("restored")

    def do_main(self):
        self.start_at("refs/remotes/h/main")
        self.commit("main moves")
        code, out = self.push(self.owner, "refs/heads/main")
        assert code == 0, out
        if self.last_push is not None:  # merging what main already has changes nothing
            cleanup.cleanup_after_push(self.last_push)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_nameless_pushes_never_capture_unrelated_work(ops, tmp_path, git_home):
    h = Hosted(tmp_path, git_home)
    assert role_for(h.owner, h.repo) == Role.ADMIN
    for op in ops:
        getattr(h, f"do_{op[0]}")(*op[1:])
