"""The default push policy the pre-receive hook imports: a pure function, table-tested."""

from types import SimpleNamespace

import pytest

from repos.hooks.policy import decide_all

A, B, Z = "a" * 40, "b" * 40, "0" * 40


@pytest.mark.parametrize(
    ("role", "ref", "old", "new", "allowed"),
    [
        ("admin", "refs/heads/main", A, B, True),
        ("maintainer", "refs/heads/main", A, B, True),
        ("maintainer", "refs/tags/v1", Z, B, True),
        ("maintainer", "refs/heads/gone", A, Z, True),
        ("reader", "refs/heads/main", A, B, False),
        ("reader", "refs/tags/v1", Z, B, False),
        ("", "refs/heads/main", A, B, False),
        ("owner", "refs/heads/main", A, B, False),  # unknown role labels are not roles
    ],
)
def test_write_role_needed_for_any_ref(role, ref, old, new, allowed):
    reasons = decide_all(role=role, pusher="alice", updates=[SimpleNamespace(ref=ref, old=old, new=new)])
    assert (reasons == []) is allowed
    if not allowed:
        assert reasons == [f"you need write access to push to {ref} (your role: {role or 'none'})"]
