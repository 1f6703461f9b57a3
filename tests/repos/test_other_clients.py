"""Git clients other than git itself against the live server: libgit2 (through pygit2) and dulwich.
Each clones (public anonymously, private with `<username>:<token>`), fetches new commits, pushes to
its user's workspace, sees a refused push reported as refused, and pushes nameless
(`refs/for/main`, with a topic push option). Neither speaks report-status-v2, so neither learns the
name the server picked from the protocol: the `remote:` line "hostsite: refs/for/main landed in
..." tells their users (workspaces/hooks/proc_receive.py)."""

from __future__ import annotations

import io
import re
import subprocess

import pygit2
import pytest
from dulwich import porcelain
from dulwich.client import HTTPUnauthorized
from dulwich.objects import Blob, Commit, Tree

from repos import services
from repos.models import Role, Visibility
from tests.gitutil import git

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


class Libgit2:
    name = "libgit2"

    class Callbacks(pygit2.RemoteCallbacks):
        def __init__(self, credentials=None):
            super().__init__()
            self.creds, self.statuses, self.sideband = credentials, {}, ""

        def credentials(self, url, username_from_url, allowed_types):
            if self.creds is None:
                raise pygit2.GitError("no credentials")  # libgit2 then fails the request
            return pygit2.UserPass(*self.creds)

        def sideband_progress(self, text):
            self.sideband += text

        def push_update_reference(self, refname, message):
            self.statuses[refname] = message

    def __init__(self, path, creds=None):
        self.path, self.creds = path, creds

    def clone(self, url):
        self.repo = pygit2.clone_repository(url, str(self.path), callbacks=self.Callbacks(self.creds))
        return str(self.repo.head.target)

    def fetch(self) -> str:
        self.repo.remotes["origin"].fetch(callbacks=self.Callbacks(self.creds))
        return str(self.repo.references["refs/remotes/origin/main"].target)

    def commit(self, message: str) -> str:
        repo, sig = self.repo, pygit2.Signature("Lib Git", "lib@example.invalid")
        tree = repo.TreeBuilder()
        tree.insert("libgit2.txt", repo.create_blob(message.encode()), pygit2.GIT_FILEMODE_BLOB)
        return str(repo.create_commit("refs/heads/main", sig, sig, message, tree.write(), [repo.head.target]))

    def push(self, spec: str, options=None) -> tuple[dict, str]:
        callbacks = self.Callbacks(self.creds)
        self.repo.remotes["origin"].push([spec], callbacks=callbacks, push_options=options)
        return callbacks.statuses, callbacks.sideband


class Dulwich:
    name = "dulwich"

    def __init__(self, path, creds=None):
        self.path = path
        self.auth = {"username": creds[0], "password": creds[1]} if creds else {}

    def clone(self, url):
        self.url = url
        self.repo = porcelain.clone(url, str(self.path), errstream=io.BytesIO(), **self.auth)
        return self.repo.head().decode()

    def fetch(self) -> str:
        porcelain.fetch(self.repo, "origin", errstream=io.BytesIO(), **self.auth)
        return self.repo.refs[b"refs/remotes/origin/main"].decode()

    def commit(self, message: str) -> str:
        store = self.repo.object_store
        blob = Blob.from_string(message.encode())
        tree = Tree()
        tree.add(b"dulwich.txt", 0o100644, blob.id)
        commit = Commit()
        commit.tree, commit.parents = tree.id, [self.repo.head()]
        commit.author = commit.committer = b"Dul Wich <dul@example.invalid>"
        commit.author_time = commit.commit_time = 1_700_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = message.encode()
        for obj in (blob, tree, commit):
            store.add_object(obj)
        self.repo.refs[b"refs/heads/main"] = commit.id
        return commit.id.decode()

    def push(self, spec: str, options=None) -> tuple[dict, str]:
        err = io.BytesIO()
        result = porcelain.push(
            self.repo,
            self.url,
            spec.encode(),
            outstream=io.BytesIO(),
            errstream=err,
            push_options=options,
            **self.auth,
        )
        statuses = {ref.decode(): status for ref, status in result.ref_status.items()}
        return statuses, err.getvalue().decode("utf-8", "replace")


CLIENTS = [Libgit2, Dulwich]


@pytest.fixture
def scene(world):
    world.carl = world.add("carl")  # a contributor: no role on the public repository
    owner = world.owner
    world.secret = services.repository_create(owner=owner.user, name="secret", visibility=Visibility.PRIVATE)
    services.membership_set(repo=world.secret, user=world.carl.user, role=Role.READER)
    url = f"http://owner:{owner.token}@{world.host}/owner/secret.git"
    assert owner.git("push", "--quiet", url, "main").returncode == 0
    world.public_url = f"http://{world.host}/owner/project.git"
    world.secret_url = f"http://{world.host}/owner/secret.git"
    return world


def server_refs(world, repo) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


@pytest.mark.parametrize("client_class", CLIENTS, ids=lambda c: c.name)
def test_clone_and_fetch(scene, tmp_path, client_class):
    public = client_class(tmp_path / "public")
    assert public.clone(scene.public_url) == scene.base_sha
    new = scene.owner.commit("a new commit")
    assert scene.owner.push("main").returncode == 0
    assert public.fetch() == new

    # Private: anonymous gets nothing; a reader's token clones and fetches.
    with pytest.raises((pygit2.GitError, HTTPUnauthorized)):
        client_class(tmp_path / "anonymous").clone(scene.secret_url)
    private = client_class(tmp_path / "private", creds=("carl", scene.carl.token))
    assert private.clone(scene.secret_url) == scene.base_sha
    url = f"http://owner:{scene.owner.token}@{scene.host}/owner/secret.git"
    assert scene.owner.git("push", "--quiet", url, "main").returncode == 0
    assert private.fetch() == new


@pytest.mark.parametrize("client_class", CLIENTS, ids=lambda c: c.name)
def test_workspace_push_refusal_and_nameless_push(scene, tmp_path, client_class):
    client = client_class(tmp_path / "work", creds=("carl", scene.carl.token))
    client.clone(scene.public_url)
    sha = client.commit(f"work from {client.name}")

    statuses, _ = client.push("refs/heads/main:refs/users/carl/feature")
    assert statuses == {"refs/users/carl/feature": None}
    assert server_refs(scene, scene.repo)["refs/users/carl/feature"] == sha

    # A reader's branch push lands in the workspace: the client reports the branch (report-status v1),
    # the remote: line names the ref, and no branch is created.
    statuses, messages = client.push("refs/heads/main:refs/heads/my-fix")
    assert statuses == {"refs/heads/my-fix": None}
    assert "hostsite: refs/heads/my-fix landed in refs/users/carl/my-fix" in messages
    assert "refs/heads/my-fix" not in server_refs(scene, scene.repo)
    assert server_refs(scene, scene.repo)["refs/users/carl/my-fix"] == sha

    # Refused: reported per ref with git's status, the policy's reason on the side band; no exception.
    statuses, messages = client.push("refs/heads/main:refs/tags/v1")
    assert statuses == {"refs/tags/v1": "pre-receive hook declined"}
    assert "hostsite: you need write access to push tags (refs/tags/v1)" in messages
    assert "refs/tags/v1" not in server_refs(scene, scene.repo)

    # Nameless: the client reports refs/for/main (report-status v1); the remote: line names the ref.
    statuses, messages = client.push("refs/heads/main:refs/for/main")
    assert statuses == {"refs/for/main": None}
    named = re.search(r"hostsite: refs/for/main landed in (refs/users/carl/main-[0-9a-f]{12})", messages)
    assert named and server_refs(scene, scene.repo)[named[1]] == sha
    # With a topic push option: the workspace ref is named after it.
    statuses, messages = client.push("refs/heads/main:refs/for/main", options=[f"topic={client.name}-topic"])
    assert statuses == {"refs/for/main": None}
    assert f"hostsite: refs/for/main landed in refs/users/carl/{client.name}-topic" in messages
    assert server_refs(scene, scene.repo)[f"refs/users/carl/{client.name}-topic"] == sha
    assert not any(ref.startswith("refs/for/") for ref in server_refs(scene, scene.repo))


@pytest.mark.parametrize("client_class", CLIENTS, ids=lambda c: c.name)
def test_a_read_token_cannot_push(scene, tmp_path, client_class):
    token = services.token_create(user=scene.carl.user, scope="read")[1]
    client = client_class(tmp_path / "work", creds=("carl", token))
    client.clone(scene.public_url)
    client.commit("not allowed")
    with pytest.raises(Exception) as exc:  # each library raises its own error
        client.push("refs/heads/main:refs/users/carl/x")
    assert exc.type.__module__.split(".")[0] in ("pygit2", "_pygit2", "dulwich"), exc.type
    assert "refs/users/carl/x" not in server_refs(scene, scene.repo)
    assert git(scene.env, "ls-remote", scene.public_url).returncode == 0  # the server is fine
