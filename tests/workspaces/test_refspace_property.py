"""A property of the workspace layout, over random sequences of what one contributor does: branch
pushes (mapped to refs/users/<me>/<branch>), nameless pushes (refs/for/<branch>, with and without
a topic), deletions of their refs, and restores of what merged-ref cleanup archived after the
owner merged their work, and refs pushed by name below the name a nameless head would get.

No push ever fails on a ref name: git's "cannot lock ref ... exists" (a ref where another needs
a directory, or the reverse) never reaches the contributor. Forced branch pushes and nameless
pushes of new work always land; a restore fails only when a ref of that very name exists.

Real git, real hooks: each push runs receive-pack on the hosted repository with the
configuration and hook environment the smart HTTP view gives it (test_nameless_property.Hosted).
Branch and ref names are written out as a contributor types them."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from repos.errors import Conflict
from tests.workspaces.test_nameless_property import LANDED, Hosted
from workspaces import cleanup
from workspaces.models import ArchivedRef

pytestmark = pytest.mark.django_db

# Canonical branches, one with a '/' (its nameless heads flatten it). The contributor's branch
# names include the canonical ones (the newcomer's `git push origin main`) and names no nameless
# head could take; none is the directory of another, which would be the contributor's own clash.
CANONICAL = ("main", "release/1.x")
BRANCH_NAMES = ("main", "release/1.x", "fix", "feature/a")
TOPICS = ("t1", "fix")
LOCK_ERRORS = ("cannot lock ref", "exists; cannot create", "unable to resolve reference")

branch_op = st.tuples(st.just("branch"), st.sampled_from(BRANCH_NAMES), st.booleans())  # on own work
nameless_op = st.tuples(
    st.just("nameless"), st.sampled_from(CANONICAL), st.sampled_from((None, *TOPICS)), st.booleans()
)
delete_op = st.tuples(st.just("delete"), st.integers(0, 7))
merge_op = st.tuples(st.just("merge"), st.integers(0, 7), st.booleans())  # and restore it
restore_op = st.tuples(st.just("restore"), st.integers(0, 7))
below_op = st.tuples(st.just("below"))
operations = st.lists(
    st.one_of(
        branch_op, branch_op, nameless_op, nameless_op, nameless_op, delete_op, merge_op, restore_op, below_op
    ),
    min_size=2,
    max_size=8,
)


class Contributor(Hosted):
    """The hosted repository, its owner, and alice pushing to it."""

    def __init__(self, tmp_path, env):
        super().__init__(tmp_path, env, branches=CANONICAL)
        self.alice = self.users["alice"]
        self.own = f"refs/users/{self.alice.username}/"

    def mine(self) -> list[str]:
        return sorted(ref for ref in self.refs() if ref.startswith(self.own))

    def checked(self, code: int, out: str) -> tuple[int, str]:
        assert not any(error in out for error in LOCK_ERRORS), out
        return code, out

    def start(self, k: int | None) -> None:
        """Check out canonical main, or one of alice's refs (k-th)."""
        mine = self.mine()
        if k is None or not mine:
            self.start_at("refs/remotes/h/main")
        else:
            self.start_at(mine[k % len(mine)].replace("refs/users/", "refs/remotes/u/", 1))

    def do_branch(self, name: str, on_own: bool) -> None:
        self.start(self.serial if on_own else None)
        new = self.commit(f"branch {name}")
        code, out = self.checked(*self.push(self.alice, f"refs/heads/{name}", ("force",), source="+HEAD"))
        assert code == 0, out
        assert self.refs()[self.own + name] == new
        self.proposed_for.pop(self.own + name, None)
        event("branch push")

    def do_nameless(self, branch: str, topic: str | None, on_own: bool) -> None:
        self.start(self.serial if on_own else None)
        new = self.commit(f"for {branch}")
        options = (f"topic={topic}",) if topic else ()
        code, out = self.checked(*self.push(self.alice, f"refs/for/{branch}", options))
        if topic is None:
            # New work, never on the branch: it always lands, in a ref of its own or a head it builds on.
            assert code == 0, out
        if code == 0:
            ref = dict(LANDED.findall(out))[f"refs/for/{branch}"]
            assert self.refs()[ref] == new
            self.proposed_for[ref] = branch
            event("nameless landed" if topic is None else "topic landed")
        else:
            event("topic refused")

    def do_below(self) -> None:
        """A ref pushed by name below the name a nameless push of the same commit would get:
        the hook picks another name rather than fail to lock."""
        self.start_at("refs/remotes/h/main")
        sha = self.commit("below")
        taken = f"{self.own}main-{sha[:12]}"
        code, out = self.checked(*self.push(self.alice, f"{taken}/x", ("force",)))
        assert code == 0, out
        code, out = self.checked(*self.push(self.alice, "refs/for/main"))
        assert code == 0, out
        assert dict(LANDED.findall(out))["refs/for/main"] == f"{taken}-2"
        self.proposed_for[f"{taken}-2"] = "main"
        event("nameless beside a ref below its name")

    def do_delete(self, k: int) -> None:
        # By full name: this harness's client is shown the branches, not the aliases the live
        # advertisement shows, so a mapped `:main` would carry the branch's tip as its old value
        # (tests/workspaces/test_branch_push.py deletes through the mapping, live).
        mine = self.mine()
        if not mine:
            return
        ref = mine[k % len(mine)]
        code, out = self.checked(*self.push(self.alice, ref, ("force",), source=""))
        assert code == 0, out
        assert ref not in self.refs()
        event("deleted")

    def do_merge(self, k: int, restore: bool) -> None:
        mine = self.mine()
        if not mine:
            return
        ref = mine[k % len(mine)]
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
        if self.last_push is not None:
            archived = cleanup.cleanup_after_push(self.last_push)
            if restore and archived:
                self.do_restore(0, archived)

    def do_restore(self, k: int, rows=None) -> None:
        rows = rows or list(
            ArchivedRef.objects.filter(repository=self.repo, state=ArchivedRef.State.ARCHIVED).order_by("pk")
        )
        if not rows:
            return
        row = rows[k % len(rows)]
        taken = row.ref in self.refs()
        try:
            cleanup.restore(row, user=self.alice)
        except Conflict:
            assert taken, f"restoring {row.ref} failed while no ref of that name exists: {self.mine()}"
            event("restore refused: the name is taken")
            return
        assert self.refs()[row.ref] == row.sha
        event("restored")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_no_push_of_one_contributor_fails_on_a_ref_name(ops, tmp_path, git_home):
    c = Contributor(tmp_path, git_home)
    for op in ops:
        getattr(c, f"do_{op[0]}")(*op[1:])
