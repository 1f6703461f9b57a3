"""The push policy (repos/hooks/pushpolicy.py): role x ref class x create/update/force/delete,
as a table."""

from __future__ import annotations

import pytest

from repos.hooks.pushpolicy import Rules, Update, decide, decide_all

A, B, C, Z = "a" * 40, "b" * 40, "c" * 40, "0" * 40
# B descends from A; C does not (a force-push from A to C).
ANCESTRY = {(A, B)}
OPS = {"create": (Z, B), "update": (A, B), "force": (A, C), "delete": (A, Z)}
RULES = Rules(default_branch="main", protected={"release": False, "wild": True})


def run(role, ref, op, *, pusher="alice", rules=RULES, count=0):
    old, new = OPS[op]
    return decide(
        role=role,
        pusher=pusher,
        update=Update(old, new, ref),
        rules=rules,
        is_ancestor=lambda x, y: (x, y) in ANCESTRY,
        workspace_ref_count=lambda user: count,
    )


ROLES = ["", "reader", "maintainer", "admin"]
REF_CLASSES = {
    "feature branch": "refs/heads/feature",
    "default branch": "refs/heads/main",
    "protected branch": "refs/heads/release",
    "protected, force allowed": "refs/heads/wild",
    "tag": "refs/tags/v1",
    "own workspace": "refs/users/alice/work",
    "other's workspace": "refs/users/bob/work",
    "nameless": "refs/for/main",
    "other namespace": "refs/notes/commits",
    "imported namespace": "refs/imported/pull/1/head",
    "legal hold": "refs/takedown/bob/work",
    "cleanup archive": "refs/archive/bob/7",
    "bare workspace prefix": "refs/users/alice",
}


def expected(role: str, ref_class: str, op: str) -> bool:
    if role == "":
        return False
    write = role in ("maintainer", "admin")
    if ref_class == "feature branch" or ref_class == "tag":
        return write
    if ref_class in ("default branch", "protected branch"):
        return write and op in ("create", "update")
    if ref_class == "protected, force allowed":
        return write and op != "delete"
    if ref_class == "own workspace":
        return True
    if ref_class == "other's workspace":
        return write  # maintainers may edit workspaces by default; admins always
    if ref_class == "nameless":
        return op != "delete"
    if ref_class in ("other namespace", "imported namespace"):
        return role == "admin" and op == "delete"  # admins remove what an import brought
    return False


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("ref_class", list(REF_CLASSES))
@pytest.mark.parametrize("role", ROLES)
def test_policy_matrix(role, ref_class, op):
    reason = run(role, REF_CLASSES[ref_class], op)
    assert (reason is None) is expected(role, ref_class, op), reason


def test_maintainers_may_not_edit_workspaces_when_the_setting_is_off():
    rules = Rules(maintainers_edit_workspaces=False)
    assert run("maintainer", "refs/users/bob/work", "update", rules=rules) is not None
    assert run("admin", "refs/users/bob/work", "update", rules=rules) is None


def test_frozen_workspace_refuses_its_owner_only():
    rules = Rules(frozen=frozenset({"alice"}))
    assert "frozen" in run("reader", "refs/users/alice/work", "update", rules=rules)
    assert "frozen" in run("admin", "refs/for/main", "create", rules=rules)
    assert run("admin", "refs/users/alice/work", "update", pusher="carol", rules=rules) is None


def test_taken_down_workspace_refuses_everyone_but_deletions():
    rules = Rules(frozen=frozenset({"alice"}), taken_down=frozenset({"alice"}))
    for role, pusher in (("admin", "carol"), ("maintainer", "carol"), ("reader", "alice")):
        assert "taken down" in run(role, "refs/users/alice/work", "create", pusher=pusher, rules=rules)
    assert run("admin", "refs/users/alice/work", "delete", pusher="carol", rules=rules) is None
    assert run("admin", "refs/users/bob/work", "create", pusher="carol", rules=rules) is None
    assert Rules.from_env(rules.to_env()) == rules


def test_ref_limit_counts_existing_and_pending_creations():
    rules = Rules(ref_limit=3)
    assert run("reader", "refs/users/alice/x", "create", rules=rules, count=2) is None
    assert "limit" in run("reader", "refs/users/alice/x", "create", rules=rules, count=3)
    assert run("reader", "refs/users/alice/x", "update", rules=rules, count=3) is None  # updates are fine
    updates = [Update(Z, B, f"refs/users/alice/n{i}") for i in range(3)]
    reasons = decide_all(
        role="reader",
        pusher="alice",
        updates=updates,
        rules=rules,
        is_ancestor=lambda a, b: True,
        workspace_ref_count=lambda u: 1,
    )
    assert len(reasons) == 1 and "limit" in reasons[0]


@pytest.mark.parametrize(
    "ref", ["refs/users/alice/" + "x" * 250, "refs/users/alice/a\x01b", "refs/users/alice/\x7f"]
)
def test_invalid_ref_names(ref):
    assert "not a valid ref name" in run("admin", ref, "create")


def test_denials_say_what_would_work():
    reason = run("reader", "refs/heads/feature", "create")
    assert "git push origin HEAD:refs/users/alice/feature" in reason
    assert "git push origin HEAD:refs/for/main" in reason
    reason = run("reader", "refs/users/bob/fix", "update")
    assert "git push origin HEAD:refs/users/alice/fix" in reason
    assert "git push origin HEAD:refs/for/main" in run("reader", "refs/meta/config", "create")
    assert "pull --rebase" in run("admin", "refs/heads/main", "force")


def test_the_policy_and_the_hook_handlers_touch_no_database():
    """pre-receive's and proc-receive's handlers run on the hook socket's thread while the
    request's thread waits on git, perhaps inside a transaction (SQLite's write lock): a query
    there could wait forever. So they, and the policy they apply, import only the standard
    library, each other and the hook socket: never Django, never a model."""
    import ast
    import sys
    from pathlib import Path

    import repos.hooks
    import workspaces.hooks

    modules = [
        *(Path(repos.hooks.__file__).parent / name for name in
          ("pushpolicy.py", "pre_receive.py", "contentguard.py", "hookgit.py", "refnames.py", "updates.py", "refspace.py")),
        *(Path(workspaces.hooks.__file__).parent / name for name in ("proc_receive.py", "refcas.py", "nameless_push.py")),
    ]  # fmt: skip
    allowed = ("repos.hooks", "workspaces.hooks", "gitcore.hooksocket")
    for path in modules:
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        foreign = {
            name
            for name in names
            if name.split(".")[0] not in sys.stdlib_module_names
            and name != "__future__"
            and not name.startswith(allowed)
        }
        assert not foreign, (path.name, foreign)


def test_rules_round_trip_through_the_environment():
    rules = Rules(
        default_branch="trunk",
        protected={"release/1.x": True, "main": False},
        maintainers_edit_workspaces=False,
        frozen=frozenset({"eve", "mallory"}),
        ref_limit=7,
    )
    assert Rules.from_env(rules.to_env()) == rules
    assert Rules.from_env(RULES.to_env()) == RULES
    assert Rules.from_env({}) == Rules()


MIRROR = Rules(default_branch="main", mirror=True)


@pytest.mark.parametrize("role", ["reader", "maintainer", "admin"])
@pytest.mark.parametrize("op", list(OPS))
def test_a_mirror_s_canonical_refs_change_only_through_the_mirror(role, op):
    for ref in ("refs/heads/main", "refs/heads/feature", "refs/tags/v1"):
        reason = run(role, ref, op, rules=MIRROR)
        assert reason is not None and "mirrors an upstream" in reason, (role, ref, op, reason)
        assert "git push origin HEAD:refs/users/alice/" in reason
    # Workspaces stay open: that is how a project tries hostsite without moving.
    assert run(role, "refs/users/alice/work", op, rules=MIRROR) is None
    assert run(role, "refs/for/main", "create", rules=MIRROR) is None
    assert Rules.from_env(MIRROR.to_env()) == MIRROR


def test_admins_never_remove_the_platform_s_own_refs():
    for ref in ("refs/takedown/bob/work", "refs/archive/bob/7"):
        assert "not a ref you can push to" in run("admin", ref, "delete")
    assert run("admin", "refs/pull/12/head", "delete") is None
    assert run("admin", "refs/pull/12/head", "update") is not None  # removing only, never writing


@pytest.mark.parametrize(
    ("ref", "op", "refused"),
    [
        ("refs/heads/evil\u202egnp.exe", "create", True),
        ("refs/users/alice/a\u200bb", "update", True),
        ("refs/for/main/top\u2067ic", "create", True),
        ("refs/tags/v1\ufeff", "create", True),
        ("refs/users/alice/no\u00a0break", "create", True),
        ("refs/users/alice/soft\u00adhyphen", "force", True),
        ("refs/users/alice/evil\u202e", "delete", False),  # removing one pushed before stays possible
        ("refs/users/alice/caf\u00e9", "create", False),  # visible non-ASCII is fine
    ],
)
def test_invisible_characters_in_ref_names(ref, op, refused):
    reason = run("admin", ref, op)
    assert (reason is not None and "invisible" in reason) is refused, reason


MAPPED = Rules(default_branch="main", protected={"release": False}, map_branches=True, ref_limit=3)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("ref", ["refs/heads/feature", "refs/heads/main", "refs/heads/release"])
def test_mapped_branch_pushes_are_judged_as_workspace_writes(op, ref):
    # A reader's branch push lands in refs/users/alice/<name>: any op, protected or not (the
    # branch itself does not move), as a write to the own workspace would be.
    assert run("reader", ref, op, rules=MAPPED) is None
    # Writers are unaffected: the default branch still refuses deletion.
    if ref == "refs/heads/main" and op == "delete":
        assert "cannot be deleted" in run("maintainer", ref, op, rules=MAPPED)


@pytest.mark.parametrize(
    ("rules", "count", "op", "needle"),
    [
        (Rules(map_branches=True, frozen={"alice"}), 0, "update", "frozen by a moderator"),
        (Rules(map_branches=True, frozen={"alice"}, taken_down={"alice"}), 0, "create", "taken down"),
        (Rules(map_branches=True, ref_limit=3), 3, "create", "already holds 3 refs"),
        (Rules(map_branches=True, banned={"alice"}), 0, "update", "banned"),
    ],
)
def test_mapped_branch_pushes_keep_the_workspace_rules(rules, count, op, needle):
    assert needle in run("reader", "refs/heads/feature", op, rules=rules, count=count)


def test_mapped_deletion_and_update_pass_the_limit():
    rules = Rules(map_branches=True, ref_limit=3)
    assert run("reader", "refs/heads/feature", "delete", rules=rules, count=3) is None
    assert run("reader", "refs/heads/feature", "update", rules=rules, count=3) is None


def test_mapped_creations_count_together_with_workspace_creations():
    def reasons(updates):
        return decide_all(
            role="reader",
            pusher="alice",
            updates=updates,
            rules=Rules(map_branches=True, ref_limit=3),
            is_ancestor=lambda x, y: True,
            workspace_ref_count=lambda user: 1,
        )

    two = [Update(Z, B, "refs/heads/one"), Update(Z, B, "refs/users/alice/two")]
    assert reasons(two) == []
    three = [*two, Update(Z, B, "refs/heads/three")]
    assert ["already holds 3 refs" in r for r in reasons(three)] == [True]


def test_mapped_invisible_names_are_refused_but_deletable():
    ref = "refs/heads/fix\u202e"
    assert "invisible" in run("reader", ref, "create", rules=MAPPED)
    assert run("reader", ref, "delete", rules=MAPPED) is None


def test_mapped_names_too_long_for_the_workspace_are_refused():
    name = "x" * (255 - len("refs/heads/"))
    assert run("maintainer", f"refs/heads/{name}", "create", rules=MAPPED) is None
    assert "too long for your workspace" in run("reader", f"refs/heads/{name}", "create", rules=MAPPED)


def test_tags_by_contributors_are_refused_with_a_hint():
    reason = run("reader", "refs/tags/v1", "create", rules=MAPPED)
    assert "tags are the maintainers' to make" in reason
    assert "git push origin HEAD:refs/users/alice/v1" in reason
    assert run("maintainer", "refs/tags/v1", "create", rules=MAPPED) is None


def test_setting_off_keeps_the_old_refusal():
    reason = run("reader", "refs/heads/feature", "create", rules=Rules(map_branches=False))
    assert reason.startswith("you need write access to push to refs/heads/feature; push to your workspace")
