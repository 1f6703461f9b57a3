"""repos.hooks.refspace: the names it builds and how it reads them back."""

from __future__ import annotations

import pytest

from repos.hooks import refspace


def test_a_nameless_head_is_one_component_beside_the_branch_it_was_pushed_for():
    assert refspace.nameless_ref("alice", "main", "0123456789ab") == "refs/users/alice/main-0123456789ab"
    assert refspace.nameless_ref("alice", "release/1.x", "0123456789ab", 2) == (
        "refs/users/alice/release-1.x-0123456789ab-2"
    )
    # Beside the ref a branch push of the same branch maps to, never below it.
    mapped = refspace.workspace_ref("alice", "release/1.x")
    assert not refspace.name_conflicts(
        refspace.nameless_ref("alice", "release/1.x", "0123456789ab"), [mapped]
    )


@pytest.mark.parametrize(
    ("ref", "parts"),
    [
        ("refs/users/alice/main-0123456789ab", ("alice", "main", "0123456789ab")),
        ("refs/users/alice/main-next-0123456789ab-3", ("alice", "main-next", "0123456789ab")),
        ("refs/users/alice/release-1.x-" + "a" * 64, ("alice", "release-1.x", "a" * 64)),
        ("refs/users/alice/main-0123456789a", None),  # 11 digits
        ("refs/users/alice/main/0123456789ab", None),  # the old layout
        ("refs/users/alice/0123456789ab", None),  # no branch
        ("refs/heads/main-0123456789ab", None),
    ],
)
def test_nameless_parts(ref, parts):
    assert refspace.nameless_parts(ref) == parts


def test_the_branch_of_a_head_is_found_among_the_branches_that_exist():
    head = "refs/users/alice/release-1.x-0123456789ab"
    assert refspace.nameless_branch(head, {"main", "release/1.x"}) == "release/1.x"
    # Spelled as the stem wins over a branch whose '/' flattened into it.
    assert refspace.nameless_branch(head, {"release-1.x", "release/1.x"}) == "release-1.x"
    assert refspace.nameless_branch(head, {"main"}) is None
    assert refspace.is_nameless_for(head, "release/1.x") and not refspace.is_nameless_for(head, "release")


@pytest.mark.parametrize(
    ("existing", "conflicts"),
    [
        (["refs/users/a/main-x"], True),  # the ref itself
        (["refs/users/a/main-x/y"], True),  # below it: it would have to be a directory
        (["refs/users/a/main"], False),  # the branch push of main
        (["refs/users/a/main-x-2", "refs/users/a/main-xy/z"], False),
    ],
)
def test_name_conflicts(existing, conflicts):
    assert refspace.name_conflicts("refs/users/a/main-x", existing) is conflicts
    assert refspace.name_conflicts("refs/users/a/main-x/y", ["refs/users/a/main-x"])  # above it


def test_workspace_names():
    assert refspace.owner_of("refs/users/bob/fix/docs") == "bob"
    assert refspace.owner_of("refs/users/bob/") is None and refspace.owner_of("refs/heads/x") is None
    assert refspace.workspace_name("refs/users/bob/fix/docs") == "fix/docs"
    assert refspace.workspace_label("refs/users/bob/fix") == "bob/fix"
    assert refspace.legacy_nameless("refs/users/bob/release/1.x/0123456789ab") == (
        "bob",
        "release/1.x",
        "0123456789ab",
    )
    assert (
        refspace.for_ref("main", "t1") == "refs/for/main/t1"
        and refspace.for_target("refs/for/main/t1") == "main/t1"
    )
