"""The push policy's rule table (repos/hooks/pushpolicy.py FIELDS): every field's trip through
the hook's environment, and protected tags, the rule the table was built for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repos.hooks.pushpolicy import FIELDS, Rules, Update, decide

A, B, C, Z = "a" * 40, "b" * 40, "c" * 40, "0" * 40
OPS = {"create": (Z, B), "update": (A, B), "force": (A, C), "delete": (A, Z)}
TAGS = Rules(protected_tags=("v*", "release-?"))


def run(role, ref, op, rules=TAGS):
    old, new = OPS[op]
    return decide(
        role=role,
        pusher="alice",
        update=Update(old, new, ref),
        rules=rules,
        is_ancestor=lambda x, y: (x, y) == (A, B),
        workspace_ref_count=lambda user: 0,
    )


@pytest.mark.parametrize(
    ("role", "ref", "op", "needle"),
    [
        ("maintainer", "refs/tags/v1.0", "create", None),
        ("admin", "refs/tags/v1.0", "create", None),
        ("maintainer", "refs/tags/v1.0", "update", "cannot be moved"),
        ("maintainer", "refs/tags/v1.0", "force", "cannot be moved"),
        ("admin", "refs/tags/v1.0", "update", "cannot be moved"),  # nobody moves one
        ("admin", "refs/tags/v1.0", "force", "cannot be moved"),
        ("maintainer", "refs/tags/v1.0", "delete", "only the repository's admins may delete it"),
        ("admin", "refs/tags/v1.0", "delete", None),
        # `?` is one character: release-1 matches, release-10 does not.
        ("maintainer", "refs/tags/release-1", "update", "cannot be moved"),
        ("maintainer", "refs/tags/release-10", "update", None),
        ("maintainer", "refs/tags/release-10", "delete", None),
        # Tags no pattern matches are unaffected.
        ("maintainer", "refs/tags/nightly", "force", None),
        ("maintainer", "refs/tags/nightly", "delete", None),
        ("maintainer", "refs/tags/xv1", "update", None),  # a pattern matches the whole name
        # Branches of the same name are not tags.
        ("maintainer", "refs/heads/v1.0", "force", None),
        # Readers meet the rule about tags before the patterns.
        ("reader", "refs/tags/v1.0", "create", "you need write access"),
    ],
)
def test_protected_tags(role, ref, op, needle):
    reason = run(role, ref, op)
    if needle is None:
        assert reason is None
    else:
        assert reason is not None and needle in reason, reason


def test_a_protected_tag_refusal_names_the_pattern_and_what_to_do():
    assert run("maintainer", "refs/tags/v2", "update") == (
        "refs/tags/v2 is a protected tag (v*) and cannot be moved; tag the new commit under a new name"
    )
    assert run("maintainer", "refs/tags/v2", "delete") == (
        "refs/tags/v2 is a protected tag (v*): only the repository's admins may delete it"
    )


def test_without_patterns_tags_move_as_before():
    assert run("maintainer", "refs/tags/v1", "force", rules=Rules()) is None
    assert run("maintainer", "refs/tags/v1", "delete", rules=Rules()) is None


# Values each field can hold in a repository: names as git and the username rules allow them
# (no ',' or ':' in branch and user names, no newline in a tag pattern).
NAME = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters=",:"), min_size=1)
PATTERN = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=20)
VALUES = {
    "default_branch": NAME,
    "protected": st.dictionaries(NAME, st.booleans(), max_size=4),
    "protected_tags": st.lists(PATTERN, max_size=4).map(tuple),
    "maintainers_edit_workspaces": st.booleans(),
    "frozen": st.frozensets(NAME, max_size=4),
    "ref_limit": st.integers(min_value=0, max_value=10**9),
    "banned": st.frozensets(NAME, max_size=4),
    "mirror": st.booleans(),
    "taken_down": st.frozensets(NAME, max_size=4),
    "map_branches": st.booleans(),
}


def test_every_field_has_values_to_try():
    # A new row in FIELDS without a strategy here would go untested.
    assert set(VALUES) == {name for name, *_ in FIELDS} == set(Rules.__slots__)


@given(st.fixed_dictionaries({}, optional=VALUES))
def test_every_field_survives_the_environment(values):
    rules = Rules(**values)
    env = rules.to_env()
    assert set(env) == {var for _name, _default, var, _codec in FIELDS}
    assert all(isinstance(text, str) for text in env.values())
    assert Rules.from_env(env) == rules


def test_fields_default_when_absent_or_unreadable():
    assert Rules.from_env({}) == Rules()
    assert Rules.from_env({"HOSTSITE_WORKSPACE_REF_LIMIT": "many", "HOSTSITE_DEFAULT_BRANCH": ""}) == Rules()
    # A flag present but not "1" is off, whatever its default.
    assert Rules.from_env({"HOSTSITE_MAINTAINERS_EDIT": ""}).maintainers_edit_workspaces is False


def test_rules_compare_and_show_by_every_field():
    assert Rules(protected_tags=["v*"]) == Rules(protected_tags=("v*",))
    assert Rules(protected_tags=("v*",)) != Rules()
    assert "protected_tags=('v*',)" in repr(Rules(protected_tags=("v*",)))
    with pytest.raises(TypeError, match="no field nope"):
        Rules(nope=1)
