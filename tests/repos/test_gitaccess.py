"""The git access contract (repos.gitaccess): backends loaded from settings, their answers
combined in order, the one policy the hooks and the web's writes share, and the checks that
reach a user through real git."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

from repos import gitaccess, storage
from repos.errors import Forbidden
from repos.gitaccess import BaseGitAccess, GitRequest
from repos.gitaccess.backends import DEFAULT_POLICY
from repos.hooks.updates import Update
from reviews import merge, services
from tests.reviews.conftest import Scene
from workspaces.access import WorkspaceAccess
from workspaces.models import Workspace, WorkspaceSettings

HERE = Path(__file__).resolve().parent
TEST_POLICY = HERE / "gitaccess_policy.py"
WORKSPACE_POLICY = Path(storage.__file__).resolve().parent.parent / "workspaces" / "access" / "policy.py"
ASKED: list[str] = []


class First(BaseGitAccess):
    def policy_source(self) -> Path:
        return DEFAULT_POLICY.with_name("first-policy.py")

    def extra_hooks(self) -> dict[str, Path]:
        return {"proc-receive": Path("/first"), "update": Path("/first-update")}

    def hook_env(self, req: GitRequest) -> dict[str, str]:
        return {"A": "first", "B": "first"}

    def git_config(self, req, *, advertise, refs):
        return [("x.first", str(advertise))]

    def refused_wants(self, req, wants):
        ASKED.append("first")
        return None if "bad" not in wants() else "first refuses"


class Second(BaseGitAccess):
    def policy_source(self) -> Path:
        return TEST_POLICY

    def extra_hooks(self) -> dict[str, Path]:
        return {"proc-receive": Path("/second")}

    def hook_env(self, req: GitRequest) -> dict[str, str]:
        return {"B": "second", "TEST_POLICY_RULE": " (rule from the environment)"}

    def git_config(self, req, *, advertise, refs):
        return [("x.second", ",".join(refs or []))]

    def refused_wants(self, req, wants):
        ASKED.append("second")
        return "second refuses" if wants() else None


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
    assert gitaccess.policy_source() == TEST_POLICY  # the last that names one
    assert gitaccess.extra_hooks() == {"proc-receive": Path("/second"), "update": Path("/first-update")}
    assert gitaccess.hook_env(REQ) == {
        "A": "first",
        "B": "second",
        "TEST_POLICY_RULE": " (rule from the environment)",
    }
    assert gitaccess.git_config(REQ, advertise=True, refs=["refs/heads/a"]) == [
        ("x.first", "True"),
        ("x.second", "refs/heads/a"),
    ]
    assert gitaccess.commit_hidden(REQ, "a" * 40) is False


@override_settings(GIT_ACCESS_BACKENDS=[path_of(First), path_of(Second)])
def test_the_first_refusal_wins_and_wants_are_read_once_if_at_all():
    reads = []

    def wants(ids):
        def read():
            reads.append(1)
            return ids

        return read

    ASKED.clear()
    assert gitaccess.refused_wants(REQ, wants(["bad"])) == "first refuses"
    assert ASKED == ["first"] and len(reads) == 1
    ASKED.clear()
    assert gitaccess.refused_wants(REQ, wants(["fine"])) == "second refuses"
    assert ASKED == ["first", "second"] and len(reads) == 2  # one more request, read once
    with override_settings(GIT_ACCESS_BACKENDS=[path_of(Silent)]):
        assert gitaccess.refused_wants(REQ, wants(["bad"])) is None
    assert len(reads) == 2  # nobody asked: the request was never parsed


def test_the_default_policy_when_no_backend_names_one():
    for backends in ([], [path_of(Silent)]):
        with override_settings(GIT_ACCESS_BACKENDS=backends):
            assert gitaccess.policy_source() == DEFAULT_POLICY
            assert gitaccess.extra_hooks() == {} and gitaccess.hook_env(REQ) == {}
            reasons = gitaccess.policy_module().decide_all(
                role="reader", pusher="bob", updates=[Update("a" * 40, "b" * 40, "refs/heads/main")]
            )
            assert reasons == ["you need write access to push to refs/heads/main (your role: reader)"]
    assert gitaccess.policy_source() == WORKSPACE_POLICY


@pytest.mark.django_db
def test_installed_hook_modules_import_alone():
    """What the hooks import beside them runs without the project on the path (-I -S)."""
    hooks = storage.install_hooks()
    assert (hooks / "policy.py").read_text() == gitaccess.policy_source().read_text()
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import policy, refnames, updates\n"
        "assert 'repos' not in sys.modules and 'django' not in sys.modules\n"
        "assert policy.Update is updates.Update and policy.INVISIBLE is refnames.INVISIBLE\n"
        "u = updates.Update('a' * 40, '0' * 40, 'refs/users/bob/x')\n"
        "print(policy.decide_all(role='reader', pusher='alice', updates=[u], rules=policy.rules_from_env({}),"
        " is_ancestor=None, workspace_ref_count=None))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, str(hooks)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "refs/users/bob/x is in bob's workspace" in out.stdout


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
    assert str(refused.value) == "the test policy refuses refs/heads/main (rule from the environment)"
    assert scene.tip("refs/heads/main") == before
    # With settings' backends the workspaces policy judges it, and lets a maintainer merge.
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="ff")
    assert scene.tip("refs/heads/main") == result.sha != before


@pytest.mark.django_db
def test_protocol_v2_wants_of_hidden_work_are_refused(scene):
    scene.checkout("secret", "main")
    hidden = scene.commit("hidden work", {"s.txt": "secret\n"})
    scene.publish("secret", "refs/users/alice/secret")
    Workspace.objects.create(repository=scene.repo, user=scene.alice, hidden=True)

    def request(user):
        return GitRequest(repository=scene.repo, user=user, role="reader", service="upload-pack")

    base = scene.tip("refs/heads/main")
    assert "not our ref" in gitaccess.refused_wants(request(scene.bob), lambda: [hidden.upper()])
    assert gitaccess.refused_wants(request(scene.bob), lambda: [base]) is None
    assert gitaccess.refused_wants(request(scene.alice), lambda: [hidden]) is None  # her own
    assert gitaccess.commit_hidden(request(scene.bob), hidden) and not gitaccess.commit_hidden(
        request(None), base
    )
    assert WorkspaceAccess().refused_wants(request(scene.bob), lambda: ["not an id"]) is not None


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
