"""Workspaces over SSH: the nameless push lands where it does over HTTP, and moderated work
stays out of reach (not advertised in v0 or v2, refused as a v2 want and as an archive)."""

from __future__ import annotations

import base64
import os
import subprocess
import urllib.request

import pytest

from tests.factories import UserFactory
from tests.sshgit.sshsupport import adopt, git, git_bytes
from tests.workspaces.rawgit import normalized
from workspaces import moderation
from workspaces.models import WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scene(world, ssh_git, git_home):
    def both_ways(pusher):
        pusher.ssh = adopt(ssh_git, world.host, git_home, pusher.user)
        return pusher

    world.owner_ssh = adopt(ssh_git, world.host, git_home, world.owner.user)
    world.alice = both_ways(world.add("alice"))
    world.bob = both_ways(world.add("bob"))
    world.staff = UserFactory(username="staff", is_staff=True)
    return world


def _ssh(pusher, scene):
    return pusher.ssh.ssh_url(scene.repo.full_name)


def test_nameless_push_lands_in_the_workspace_as_over_http(scene):
    alice = scene.alice
    first = alice.commit("part 1")
    result = git(alice.ssh.env, "push", _ssh(alice, scene), "HEAD:refs/for/main", cwd=alice.work)
    assert result.returncode == 0, result.stderr
    name = f"refs/users/alice/main-{first[:12]}"
    assert scene.refs()[name] == first
    assert name in result.stderr  # git names the ref the server chose
    # A second part over SSH advances the same head, and so does a third over HTTP.
    second = alice.commit("part 2")
    result = git(alice.ssh.env, "push", _ssh(alice, scene), "HEAD:refs/for/main", cwd=alice.work)
    assert result.returncode == 0, result.stderr
    assert scene.refs()[name] == second
    third = alice.commit("part 3")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    refs = scene.refs()
    assert refs[name] == third
    assert [r for r in refs if r.startswith("refs/users/alice/")] == [name]
    assert "refs/heads/main" in refs and refs["refs/heads/main"] == scene.base_sha


def _ls_remote(env, url, version):
    result = git(env, "-c", f"protocol.version={version}", "ls-remote", url)
    assert result.returncode == 0, result.stderr
    return {line.split("\t")[1] for line in result.stdout.splitlines()}


def _v2_fetch(env, url, sha, where):
    git(env, "init", "--quiet", "--bare", str(where))
    return git(env, "-c", "protocol.version=2", "fetch", url, sha, cwd=where)


@pytest.fixture
def alices_work(scene):
    WorkspaceSettings.objects.create(repository=scene.repo, delete_merged_refs=False)
    scene.sha = scene.alice.commit("alice's secret", name="secret.txt")
    assert scene.alice.push("HEAD:refs/users/alice/feature").returncode == 0
    return scene


@pytest.mark.parametrize("version", ["0", "2"])
def test_a_hidden_workspace_is_advertised_to_its_owner_only(alices_work, version, tmp_path):
    scene = alices_work
    ref = "refs/users/alice/feature"
    assert ref in _ls_remote(scene.bob.ssh.env, _ssh(scene.bob, scene), version)
    moderation.do_hide_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="spam"
    )
    assert ref not in _ls_remote(scene.bob.ssh.env, _ssh(scene.bob, scene), version)
    assert ref not in _ls_remote(scene.bob.ssh.env, scene.bob.ssh.http_url(scene.repo.full_name), version)
    assert ref in _ls_remote(scene.alice.ssh.env, _ssh(scene.alice, scene), version)
    owner = scene.owner_ssh  # an admin of the repository
    assert ref in _ls_remote(owner.env, owner.ssh_url(scene.repo.full_name), version)

    refused = _v2_fetch(scene.bob.ssh.env, _ssh(scene.bob, scene), scene.sha, tmp_path / "bob")
    assert refused.returncode != 0
    assert "not our ref" in refused.stderr, refused.stderr
    served = _v2_fetch(scene.alice.ssh.env, _ssh(scene.alice, scene), scene.sha, tmp_path / "alice")
    assert served.returncode == 0, served.stderr


def test_taken_down_work_is_refused_as_a_want_and_as_an_archive(alices_work, tmp_path):
    scene = alices_work
    bob = scene.bob
    # bob fetched it while it was public, by name and by id: both work before the take-down.
    assert _v2_fetch(bob.ssh.env, _ssh(bob, scene), scene.sha, tmp_path / "before").returncode == 0
    archive = ("archive", f"--remote={_ssh(bob, scene)}", "--format=tar", scene.sha)
    assert git_bytes(bob.ssh.env, *archive).returncode == 0
    moderation.do_take_down_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="legal request"
    )
    for who in (bob, scene.alice):
        assert "refs/users/alice/feature" not in _ls_remote(who.ssh.env, _ssh(who, scene), "2")
        refused = _v2_fetch(who.ssh.env, _ssh(who, scene), scene.sha, tmp_path / f"after-{who.username}")
        assert refused.returncode != 0
        assert "not our ref" in refused.stderr, refused.stderr
        archived = git_bytes(
            who.ssh.env, "archive", f"--remote={_ssh(who, scene)}", "--format=tar", scene.sha
        )
        assert archived.returncode != 0
        assert archived.stdout == b""
        said = archived.stderr.decode()
        assert "internal error" not in said, said
        for spelled in (f"{scene.sha}^0", f"{scene.sha}~0", f"{scene.sha}:", f"{scene.sha[:12]}:"):
            again = git_bytes(who.ssh.env, "archive", f"--remote={_ssh(who, scene)}", "--format=tar", spelled)
            assert again.returncode != 0 and again.stdout == b"", spelled
            assert b"NACK no branch, tag or commit" in again.stderr, again.stderr
        # The same refusal for an id nobody ever pushed: nothing tells them apart.
        unknown = git_bytes(who.ssh.env, "archive", f"--remote={_ssh(who, scene)}", "--format=tar", "1" * 40)
        assert unknown.returncode != 0
        assert said == unknown.stderr.decode().replace("1" * 40, scene.sha), (said, unknown.stderr)
    # The owner (an admin) is refused too; content the branches reach is served as before.
    owner = scene.owner_ssh
    assert (
        _v2_fetch(owner.env, owner.ssh_url(scene.repo.full_name), scene.sha, tmp_path / "o").returncode != 0
    )
    served = git_bytes(
        owner.env, "archive", f"--remote={owner.ssh_url(scene.repo.full_name)}", "--format=tar", "main"
    )
    assert served.returncode == 0 and len(served.stdout) >= 1024


def _pkt(text: str) -> bytes:
    return f"{len(text) + 4:04x}".encode() + text.encode()


def _raw_v2(ssh_git, pair, repo, *lines: str, args: tuple[str, ...]) -> subprocess.CompletedProcess:
    """One protocol v2 request written by hand (git would never send upper-case hex), then the
    end of the session."""
    body = _pkt(lines[0]) + b"0001" + b"".join(_pkt(a) for a in args) + b"0000" + b"0000"
    argv = [*ssh_git.ssh_argv(pair), "-o", "SendEnv=GIT_PROTOCOL", f"{ssh_git.user}@{ssh_git.host}"]
    return subprocess.run(
        [*argv, f"git-upload-pack '{repo.full_name}.git'"],
        input=body,
        capture_output=True,
        timeout=60,
        env={**os.environ, "GIT_PROTOCOL": "version=2"},
        check=False,
    )


@pytest.mark.parametrize("moderate", ["hide", "take down"])
def test_hand_written_v2_requests_reach_no_moderated_object(alices_work, ssh_git, moderate):
    scene = alices_work
    tree = scene.alice.git("rev-parse", f"{scene.sha}^{{tree}}", check=True).stdout.strip()
    action = moderation.do_hide_workspace if moderate == "hide" else moderation.do_take_down_workspace
    action(repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="moderated")
    pair = scene.bob.ssh.pair
    unknown = "d1e5" * 10
    as_unknown = _raw_v2(ssh_git, pair, scene.repo, "command=fetch\n", args=(f"want {unknown}\n", "done\n"))
    for oid in (scene.sha.upper(), scene.sha[:20] + scene.sha[20:].upper()):
        got = _raw_v2(ssh_git, pair, scene.repo, "command=fetch\n", args=(f"want {oid}\n", "done\n"))
        assert b"PACK" not in got.stdout, oid
        assert b"not our ref" in got.stdout, got.stdout[-300:]
        # Exactly what an id nobody has gets, the exit status included.
        assert (got.returncode, got.stdout) == (
            as_unknown.returncode,
            as_unknown.stdout.replace(unknown.encode(), scene.sha.encode()),
        )

    def info(asked):
        return _raw_v2(ssh_git, pair, scene.repo, "command=object-info\n", args=("size\n", f"oid {asked}\n"))

    for oid in (scene.sha, tree.upper()):
        # As git answers for an id it does not have (2.39: the id as sent, and no size; newer
        # git refuses the command whatever the id).
        got, expected = info(oid), info(unknown.upper() if oid.isupper() else unknown)
        swapped = expected.stdout.replace(unknown.upper().encode(), oid.encode()).replace(
            unknown.encode(), oid.encode()
        )
        assert (got.returncode, got.stdout) == (expected.returncode, swapped), got.stdout
    # The same requests for content the branches reach are served.
    got = _raw_v2(
        ssh_git, pair, scene.repo, "command=fetch\n", args=(f"want {scene.base_sha.upper()}\n", "done\n")
    )
    assert b"PACK" in got.stdout and got.returncode == 0, got.stderr


def test_pushing_moderated_work_again_over_ssh_is_refused(alices_work, tmp_path):
    scene = alices_work
    bob = scene.bob
    assert _v2_fetch(bob.ssh.env, _ssh(bob, scene), scene.sha, tmp_path / "f").returncode == 0
    bob.git("fetch", "--quiet", bob.remote, "refs/users/alice/feature", check=True)  # bob holds it
    moderation.do_take_down_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="legal request"
    )
    before = scene.refs()
    for refspec in (f"{scene.sha}:refs/users/bob/copy", f"{scene.sha}:refs/for/main"):
        result = git(bob.ssh.env, "push", _ssh(bob, scene), refspec, cwd=bob.work)
        assert result.returncode != 0
        assert "a moderator took down or blocked" in result.stderr, (refspec, result.stderr)
    assert scene.refs() == before


def _push_advertisement(ssh_git, pair, repo) -> set[str]:
    """The refs receive-pack shows a pusher (read, then the session ended with a flush-pkt)."""
    argv = [
        *ssh_git.ssh_argv(pair),
        f"{ssh_git.user}@{ssh_git.host}",
        f"git-receive-pack '{repo.full_name}.git'",
    ]
    got = subprocess.run(argv, input=b"0000", capture_output=True, timeout=60, check=False)
    assert got.returncode == 0, got.stderr
    return _refs_in(got.stdout)


def _refs_in(data: bytes) -> set[str]:
    refs, pos = set(), 0
    while pos + 4 <= len(data):
        length = int(data[pos : pos + 4], 16)
        if length < 4:
            pos += 4
            continue
        line = data[pos + 4 : pos + length].split(b"\0")[0].rstrip(b"\n")
        if b" " in line and not line.startswith(b"# service"):
            refs.add(line.split(b" ", 1)[1].decode())
        pos += length
    return refs


def test_a_push_advertises_the_canonical_refs_and_the_pushers_own_workspace(alices_work, ssh_git):
    scene = alices_work
    assert scene.bob.push("HEAD:refs/users/bob/mine").returncode == 0
    for who, own in ((scene.bob, "refs/users/bob/mine"), (scene.alice, "refs/users/alice/feature")):
        over_ssh = _push_advertisement(ssh_git, who.ssh.pair, scene.repo)
        request = urllib.request.Request(
            f"http://{scene.host}/{scene.repo.full_name}.git/info/refs?service=git-receive-pack",
            headers={
                "Authorization": "Basic " + base64.b64encode(f"{who.username}:{who.token}".encode()).decode()
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            over_http = _refs_in(response.read())
        assert over_ssh == over_http, who.username
        assert own in over_ssh and "refs/heads/main" in over_ssh
        assert not [ref for ref in over_ssh if ref.startswith("refs/users/") and not ref.startswith(own)], (
            over_ssh
        )


def _raw_v0(ssh_git, pair, repo, body: bytes) -> subprocess.CompletedProcess:
    """A stateful protocol v0 conversation written by hand, all at once: the wants, a flush,
    the haves and the end."""
    argv = [
        *ssh_git.ssh_argv(pair),
        f"{ssh_git.user}@{ssh_git.host}",
        f"git-upload-pack '{repo.full_name}.git'",
    ]
    return subprocess.run(argv, input=body, capture_output=True, timeout=60, check=False)


@pytest.mark.parametrize("moderate", ["hide", "take down"])
def test_no_ssh_fetch_tells_a_moderated_id_from_an_unknown_one(alices_work, ssh_git, moderate):
    scene = alices_work
    blob = scene.alice.git("rev-parse", f"{scene.sha}:secret.txt", check=True).stdout.strip()
    action = moderation.do_hide_workspace if moderate == "hide" else moderation.do_take_down_workspace
    action(repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="moderated")
    pair = scene.bob.ssh.pair
    unknown = "d1e5" * 10
    # Padded to SHA-256 length, an id is refused before git reads its first 40 digits.
    for padded in (scene.sha + "0" * 24, scene.base_sha + "0" * 24):
        got = _raw_v2(ssh_git, pair, scene.repo, "command=fetch\n", args=(f"want {padded}\n", "done\n"))
        assert b"PACK" not in got.stdout and b"object id" in got.stdout, got.stdout[-300:]
        got = _raw_v2(ssh_git, pair, scene.repo, "command=object-info\n", args=("size\n", f"oid {padded}\n"))
        assert b"does not name one sha1 object id" in got.stdout, got.stdout
    caps = "multi_ack_detailed side-band-64k ofs-delta no-progress"
    for hidden in (scene.sha, blob):

        def v2_have(oid):
            args = (f"want {scene.base_sha}\n", f"have {oid}\n")
            return _raw_v2(ssh_git, pair, scene.repo, "command=fetch\n", args=args).stdout

        def v0_have(oid):
            body = _pkt(f"want {scene.base_sha} {caps}\n") + b"0000" + _pkt(f"have {oid}\n") + b"0000"
            return _raw_v0(ssh_git, pair, scene.repo, body + _pkt("done\n")).stdout

        for ask in (v2_have, v0_have):
            assert normalized(ask(hidden)) == normalized(
                ask(unknown).replace(unknown.encode(), hidden.encode())
            )
        # The comparison can fail: git acknowledges an object it holds and may show.
        assert f"ACK {scene.base_sha}".encode() in v0_have(scene.base_sha)
    # A v0 want of hidden work gets git's answer for an unknown id.
    body = _pkt(f"want {scene.sha} {caps}\n") + b"0000" + _pkt("done\n")
    assert f"not our ref {scene.sha}".encode() in _raw_v0(ssh_git, pair, scene.repo, body).stdout
