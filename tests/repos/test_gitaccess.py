"""The git access contract (repos.gitaccess): backends loaded from settings, their answers
combined in order, the one push policy the hooks and the web's writes share whatever the
backends, and the checks that reach a user through real git."""

from __future__ import annotations

import pytest
from django.test import override_settings

from repos import gitaccess
from repos.errors import Forbidden
from repos.gitaccess import BaseGitAccess, GitRequest
from repos.hooks import pushpolicy
from repos.hooks.updates import ZERO_OID, Update
from reviews import merge, services
from tests.reviews.conftest import Scene
from workspaces.access.backend import WorkspaceAccess
from workspaces.models import ProtectedBranch, Workspace, WorkspaceSettings

ASKED: list[str] = []


def first(call):
    return 0


def first_update(call):
    return 0


def second(call):
    return 0


class First(BaseGitAccess):
    def hook_handlers(self):
        return {"proc-receive": first, "update": first_update}

    def hook_env(self, req: GitRequest) -> dict[str, str]:
        return {"A": "first", "B": "first"}

    def git_config(self, req, *, advertise, refs):
        return [("x.first", str(advertise))]

    def hidden_objects(self, req, oids):
        ASKED.append("first")
        return {oid for oid in oids if oid.startswith("a")}


class Second(BaseGitAccess):
    def hook_handlers(self):
        return {"proc-receive": second}

    def hook_env(self, req: GitRequest) -> dict[str, str]:
        # A backend's environment wins over the repository's rules: here, a ban.
        return {"B": "second", "HOSTSITE_BANNED": "maint"}

    def git_config(self, req, *, advertise, refs):
        return [("x.second", ",".join(refs or []))]

    def hidden_objects(self, req, oids):
        ASKED.append("second")
        return {oid for oid in oids if oid.startswith("b")}


class Silent(BaseGitAccess):
    """Adds nothing: every default of the contract."""


def path_of(cls) -> str:
    return f"{__name__}.{cls.__name__}"


REQ = GitRequest(repository=None, user=None, role="", service="upload-pack")


def test_backends_come_from_settings_in_order():
    with override_settings(GIT_ACCESS_BACKENDS=[path_of(Second), path_of(First)]):
        assert [type(b) for b in gitaccess.backends()] == [Second, First]
        assert gitaccess.backends()[0] is gitaccess.backends()[0]  # loaded once
    with override_settings(GIT_ACCESS_BACKENDS=[path_of(First)]):
        assert [type(b) for b in gitaccess.backends()] == [First]
    assert [type(b).__name__ for b in gitaccess.backends()] == [
        "WorkspaceAccess",
        "BundleAccess",
        "ReviewAccess",
    ]
    assert all(isinstance(b, gitaccess.GitAccess) for b in gitaccess.backends())


@override_settings(GIT_ACCESS_BACKENDS=[path_of(First), path_of(Silent), path_of(Second)])
def test_answers_combine_in_order():
    assert gitaccess.hook_handlers() == {"proc-receive": second, "update": first_update}
    assert gitaccess.hook_env(REQ) == {
        "A": "first",
        "B": "second",
        "HOSTSITE_BANNED": "maint",
    }
    assert gitaccess.git_config(REQ, advertise=True, refs=["refs/heads/a"]) == [
        ("x.first", "True"),
        ("x.second", "refs/heads/a"),
    ]
    assert gitaccess.hidden_objects(REQ, frozenset({"c" * 40})) == set()


@override_settings(GIT_ACCESS_BACKENDS=[path_of(First), path_of(Second)])
def test_hidden_objects_are_every_backends_together():
    ids = frozenset({"a" * 40, "b" * 40, "c" * 40})
    ASKED.clear()
    assert gitaccess.hidden_objects(REQ, ids) == {"a" * 40, "b" * 40}
    assert ASKED == ["first", "second"]
    with override_settings(GIT_ACCESS_BACKENDS=[path_of(Silent)]):
        assert gitaccess.hidden_objects(REQ, ids) == set()


@pytest.fixture
def scene(tmp_path, git_home) -> Scene:
    return Scene(tmp_path, git_home)


def proposal_for(scene: Scene):
    scene.checkout("feature", "main")
    scene.commit("feature", {"b.txt": "bee\n"})
    scene.publish("feature", "refs/users/alice/feature")
    return services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="F",
    )


@pytest.mark.django_db
def test_a_merge_is_judged_by_the_policy_the_hooks_run(scene):
    proposal = proposal_for(scene)
    before = scene.tip("refs/heads/main")
    with override_settings(GIT_ACCESS_BACKENDS=[path_of(Second)]), pytest.raises(Forbidden) as refused:
        merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="merge")
    assert str(refused.value) == "you are banned from pushing to this repository by a moderator"
    assert scene.tip("refs/heads/main") == before
    # With settings' backends nothing bans the maintainer: the same policy lets them merge.
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="ff")
    assert scene.tip("refs/heads/main") == result.sha != before


@pytest.mark.parametrize("backends", [[], [path_of(Silent)], [path_of(First)]])
@pytest.mark.django_db
def test_protected_refs_hold_whatever_the_backends(scene, backends):
    """Branch and tag protection is the repository's, not a backend's: with no backend, or
    with backends that know nothing of workspaces, the web's writes still meet it."""
    base = scene.tip("refs/heads/main")
    scene.checkout("side", "main")
    side = scene.commit("side", {"s.txt": "side\n"})
    ProtectedBranch.objects.create(repository=scene.repo, name="release")
    WorkspaceSettings.objects.create(repository=scene.repo, protected_tags="v*")
    req = GitRequest(repository=scene.repo, user=scene.maint, role="maintainer", service="receive-pack")

    def refused(old, new, ref):
        with override_settings(GIT_ACCESS_BACKENDS=backends):
            return gitaccess.check_updates(req, [Update(old, new, ref)])

    assert refused(side, base, "refs/heads/release") == [
        "refs/heads/release is a protected branch: non-fast-forward updates are refused. Fetch and "
        "rebase (git pull --rebase), or ask an admin to allow force-pushes to release"
    ]
    assert refused(base, ZERO_OID, "refs/heads/main") == [
        "refs/heads/main is the default branch and cannot be deleted"
    ]
    assert refused(base, side, "refs/tags/v1") == [
        "refs/tags/v1 is a protected tag (v*) and cannot be moved; tag the new commit under a new name"
    ]
    assert refused(ZERO_OID, side, "refs/tags/v2") == []
    assert refused(base, side, "refs/heads/feature") == []


@pytest.mark.django_db
def test_the_hooks_read_the_repository_s_rules_without_backends(scene):
    ProtectedBranch.objects.create(repository=scene.repo, name="release", allow_force=True)
    req = GitRequest(repository=scene.repo, user=scene.maint, role="maintainer", service="receive-pack")
    with override_settings(GIT_ACCESS_BACKENDS=[]):
        rules = pushpolicy.rules_from_env(gitaccess.push_env(req))
    assert rules.protected == {"release": True} and rules.default_branch == scene.repo.default_branch
    # Branch pushes are mapped to workspaces only by a backend's proc-receive.
    assert rules.map_branches is False
    with override_settings(GIT_ACCESS_BACKENDS=[], PUSH_RULES=""):
        # repos' own rules: the default branch, and nothing of workspaces.
        assert pushpolicy.rules_from_env(gitaccess.push_env(req)) == pushpolicy.Rules(
            default_branch=scene.repo.default_branch
        )


@pytest.mark.django_db
def test_hidden_work_is_hidden_from_fetches_by_id(scene):
    scene.checkout("secret", "main")
    hidden = scene.commit("hidden work", {"s.txt": "secret\n"})
    scene.publish("secret", "refs/users/alice/secret")
    Workspace.objects.create(repository=scene.repo, user=scene.alice, hidden=True)

    def request(user):
        return GitRequest(repository=scene.repo, user=user, role="reader", service="upload-pack")

    base = scene.tip("refs/heads/main")
    both = frozenset({hidden, base})
    assert gitaccess.hidden_objects(request(scene.bob), both) == {hidden}
    assert gitaccess.hidden_objects(request(None), both) == {hidden}
    assert gitaccess.hidden_objects(request(scene.alice), both) == set()  # her own
    assert WorkspaceAccess().hidden_objects(request(scene.bob), frozenset({base})) == set()


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_refused_push_says_why_on_a_remote_line(world):
    # Branch pushes by readers go to their workspace unless the repository turns that off.
    WorkspaceSettings.objects.create(repository=world.repo, branch_pushes_to_workspace=False)
    reader = world.add("carol")  # a reader of the public repository, with a clone
    reader.commit("a reader's change")
    result = reader.push("HEAD:refs/heads/main")
    assert result.returncode != 0
    assert (
        "remote: hostsite: you need write access to push to refs/heads/main; push to your workspace instead: "
        "git push origin HEAD:refs/users/carol/main" in result.stderr
    )
    assert world.refs()["refs/heads/main"] == world.base_sha
