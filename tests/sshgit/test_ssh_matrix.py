"""Role x visibility x operation over SSH, differential against smart HTTP: each operation runs
over HTTP with the person's token and over SSH with their key, against twin repositories with
the same history, and both must end alike (success or failure, and the same refs after).

Roles: the owner (admin), a maintainer, a reader member, a signed-in outsider, staff.
Operations: clone (v0 and v2, `--mirror`, so every advertised ref is compared), ls-remote,
a fetch by id of a commit in a workspace a moderator hid, a push to main, to the pusher's own
workspace and to someone else's, and an archive (`git archive --remote` over SSH; the web's
archive route over HTTP, git having no archive over smart HTTP).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile

import pytest
from django.test import Client

from repos import lifecycle, services
from repos.models import Push, Role
from tests.factories import UserFactory
from tests.sshgit.sshsupport import (
    adopt,
    commit,
    git,
    git_bytes,
    hostsite_lines,
    init_work,
    multiplex,
    person,
    refs_of,
)
from workspaces import moderation

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

ROLES = ["owner", "maintainer", "reader", "outsider", "staff"]
TRANSPORTS = ("http", "ssh")


@pytest.fixture
def matrix(ssh_git, live_server_url, tmp_path, git_home, visibility):
    """The test's visibility only (its parameter): the twins owner/<visibility>-http and -ssh."""
    host = live_server_url.removeprefix("http://")

    def make(name, **fields):
        return person(ssh_git, host, git_home, name, **fields)

    people = {
        "owner": make("owner"),
        "maintainer": make("maintainer"),
        "reader": make("reader"),
        "outsider": make("outsider"),
        "staff": make("staff", is_staff=True),
    }
    carol = make("carol")  # a reader whose workspace a moderator hid
    dave = UserFactory(username="dave")  # a reader: "someone else's workspace"
    owner = people["owner"]
    repos = {}
    for transport in TRANSPORTS:
        repo = services.repository_create(
            owner=owner.user, name=f"{visibility}-{transport}", visibility=visibility
        )
        services.membership_set(repo=repo, user=people["maintainer"].user, role=Role.MAINTAINER)
        for user in (people["reader"].user, carol.user, dave):
            services.membership_set(repo=repo, user=user, role=Role.READER)
        repos[visibility, transport] = repo
    work = tmp_path / "work"
    init_work(git_home, work)
    seed = commit(git_home, work, "seed", name="f")
    git(git_home, "checkout", "--quiet", "-b", "carol", cwd=work)
    hidden = commit(git_home, work, "carol's secret", name="secret.txt")
    git(git_home, "checkout", "--quiet", "main", cwd=work)
    staff = people["staff"].user
    for repo in repos.values():
        pushed = git(git_home, "push", owner.http_url(repo.full_name), "main", cwd=work)
        assert pushed.returncode == 0, pushed.stderr
        pushed = git(
            git_home, "push", carol.http_url(repo.full_name), "carol:refs/users/carol/secret", cwd=work
        )
        assert pushed.returncode == 0, pushed.stderr
        moderation.do_hide_workspace(repo=repo, user=carol.user, acting_user=staff, reason="spam")
    with multiplex(list(people.values())):
        yield {"people": people, "repos": repos, "work": work, "seed": seed, "hidden": hidden}


def _clone(who, url, dest, version):
    result = git(who.env, "-c", f"protocol.version={version}", "clone", "--mirror", "--quiet", url, str(dest))
    return result, (refs_of(dest) if result.returncode == 0 else None)


def _tar_names(data: bytes, *, gz: bool) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz" if gz else "r:") as tar:
        return sorted(m.name.split("/", 1)[-1] for m in tar.getmembers() if m.isfile())


def _web_archive(who, repo):
    client = Client()
    client.force_login(who.user)
    response = client.get(f"/{repo.full_name}/archive/main.tar.gz")
    if response.status_code != 200:
        return None
    return _tar_names(b"".join(response.streaming_content), gz=True)


def _ssh_archive(who, repo):
    result = git_bytes(who.env, "archive", f"--remote={who.ssh_url(repo.full_name)}", "--format=tar", "main")
    if result.returncode != 0:
        return None, result.stderr.decode()
    return _tar_names(result.stdout, gz=False), ""


@pytest.mark.parametrize("visibility", ["public", "private"])
@pytest.mark.parametrize("role", ROLES)
def test_ssh_answers_as_http_does(matrix, role, visibility, tmp_path, ssh_git):
    who = matrix["people"][role]
    twins = {t: matrix["repos"][visibility, t] for t in TRANSPORTS}
    urls = {t: who.url(t, twins[t].full_name) for t in TRANSPORTS}
    outcomes: dict[str, dict[str, object]] = {t: {} for t in TRANSPORTS}
    stderr: list[str] = []

    def note(transport, op, value, result=None):
        outcomes[transport][op] = value
        if result is not None and transport == "ssh":
            stderr.append(result.stderr if isinstance(result.stderr, str) else result.stderr.decode())

    for t in TRANSPORTS:
        for version in ("0", "2"):
            result, refs = _clone(who, urls[t], tmp_path / f"clone-{t}-{version}", version)
            note(t, f"clone v{version}", refs, result)
        result = git(who.env, "ls-remote", urls[t])
        note(t, "ls-remote", (result.returncode == 0, result.stdout), result)
        fetcher = tmp_path / f"fetch-{t}"
        git(who.env, "init", "--quiet", "--bare", str(fetcher))
        result = git(who.env, "-c", "protocol.version=2", "fetch", urls[t], matrix["hidden"], cwd=fetcher)
        note(t, "fetch hidden by id", result.returncode == 0, result)
        if t == "http":
            note(t, "archive", _web_archive(who, twins[t]))
        else:
            names, said = _ssh_archive(who, twins[t])
            note(t, "archive", names)
            stderr.append(said)

    work = matrix["work"]
    git(who.env, "checkout", "--quiet", "--detach", matrix["seed"], cwd=work)
    for op, target in (
        ("push main", "refs/heads/main"),
        ("push own workspace", f"refs/users/{who.username}/x"),
        ("push someone else's workspace", "refs/users/dave/x"),
    ):
        sha = commit(who.env, work, f"{role} {op}", name=f"{op}.txt")
        for t in TRANSPORTS:
            result = git(who.env, "push", urls[t], f"HEAD:{target}", cwd=work)
            note(t, op, result.returncode == 0, result)
        after = {t: refs_of(twins[t].disk_path) for t in TRANSPORTS}
        assert after["http"] == after["ssh"], op
        outcomes["http"][f"{op}: landed"] = outcomes["ssh"][f"{op}: landed"] = target in after["ssh"] and (
            after["ssh"][target] == sha
        )

    assert outcomes["ssh"] == outcomes["http"]
    assert not any("internal error" in text for text in stderr), stderr

    # Expectations of our own, so that both transports failing alike still fails the test.
    got = outcomes["ssh"]
    readable = visibility == "public" or role != "outsider"
    assert bool(got["clone v0"]) == bool(got["clone v2"]) == readable
    assert got["archive"] == (["f"] if readable else None)
    assert got["fetch hidden by id"] == (role in ("owner", "staff") and readable)
    assert got["push main: landed"] == (role in ("owner", "maintainer"))
    assert got["push own workspace: landed"] == readable
    assert got["push someone else's workspace: landed"] == (role in ("owner", "maintainer"))
    if readable:
        refs = got["clone v2"]
        assert isinstance(refs, dict)
        assert ("refs/users/carol/secret" in refs) == (role in ("owner", "staff"))
    else:
        _same_words_as_for_a_missing_repository(who, twins["ssh"], work)


def _same_words_as_for_a_missing_repository(who, repo, work):
    """An unreadable repository and one that does not exist are refused in the same words."""
    missing = f"{repo.owner.username}/nothere"
    for args in (("ls-remote",), ("push",), ("archive", "--format=tar", "main")):
        said = {}
        for full_name in (repo.full_name, missing):
            url = who.ssh_url(full_name)
            argv = ["archive", f"--remote={url}", *args[1:]] if args[0] == "archive" else [*args, url]
            if args[0] == "push":
                argv.append("HEAD:refs/heads/main")
            result = git(who.env, *argv, cwd=work)
            assert result.returncode != 0
            said[full_name] = result.stderr.replace(full_name, "<repo>")
        assert said[repo.full_name] == said[missing], said
        assert "hostsite: repository '<repo>' not found, or this key has no access to it" in said[missing]


# The transport beyond the matrix: a renamed repository, a large push, many refs.


def test_a_renamed_repository_is_served_at_its_new_name_with_a_notice(world, ssh_git, git_home, tmp_path):
    owner = adopt(ssh_git, world.host, git_home, world.owner.user)
    old = owner.ssh_url("owner/project")
    lifecycle.repository_move(repo=world.repo, acting_user=owner.user, new_name="renamed")
    notice = ["hostsite: owner/project is now owner/renamed; update your remote's URL"]
    listed = git(owner.env, "ls-remote", old)
    assert listed.returncode == 0, listed.stderr
    assert f"{world.base_sha}\trefs/heads/main" in listed.stdout
    assert hostsite_lines(listed.stderr) == notice
    work = tmp_path / "c"
    cloned = git(owner.env, "clone", "--quiet", old, str(work))
    assert cloned.returncode == 0 and hostsite_lines(cloned.stderr) == notice, cloned.stderr
    sha = commit(owner.env, work, "after the rename")
    pushed = git(owner.env, "push", "--quiet", "origin", "HEAD:main", cwd=work)
    assert pushed.returncode == 0 and hostsite_lines(pushed.stderr) == notice, pushed.stderr
    assert refs_of(world.repo.disk_path)["refs/heads/main"] == sha
    # Made private, the old name tells an outsider nothing, in the words of a missing one.
    services.repository_update(repo=world.repo, visibility="private")
    outsider = person(ssh_git, world.host, git_home, "outsider")
    refused = git(outsider.env, "ls-remote", old)
    assert refused.returncode != 0
    assert hostsite_lines(refused.stderr) == [
        "hostsite: repository 'owner/project' not found, or this key has no access to it"
    ]


def test_a_push_of_several_megabytes_streams_both_ways(world, ssh_git, git_home, tmp_path):
    owner = adopt(ssh_git, world.host, git_home, world.owner.user)
    work = world.owner.work
    (work / "big.bin").write_bytes(os.urandom(8 * 1024 * 1024))  # incompressible
    git(owner.env, "add", "big.bin", cwd=work)
    git(owner.env, "commit", "--quiet", "-m", "big", cwd=work)
    sha = git(owner.env, "rev-parse", "HEAD", cwd=work).stdout.strip()
    pushed = git(owner.env, "push", owner.ssh_url("owner/project"), "HEAD:refs/heads/big", cwd=work)
    assert pushed.returncode == 0, pushed.stderr
    assert refs_of(world.repo.disk_path)["refs/heads/big"] == sha
    assert Push.objects.filter(
        repository=world.repo, protocol="ssh", ref_updates__ref="refs/heads/big"
    ).exists()
    for version in ("0", "2"):
        clone = tmp_path / f"c{version}"
        result = git(
            owner.env,
            "-c",
            f"protocol.version={version}",
            "clone",
            "--quiet",
            "-b",
            "big",
            owner.ssh_url("owner/project"),
            str(clone),
        )
        assert result.returncode == 0, result.stderr
        assert (clone / "big.bin").read_bytes() == (work / "big.bin").read_bytes()


def test_a_v0_fetch_of_three_thousand_refs(world, ssh_git, git_home, tmp_path):
    owner = adopt(ssh_git, world.host, git_home, world.owner.user)
    lines = "".join(f"create refs/heads/b{i:04d} {world.base_sha}\n" for i in range(3000))
    lines += "".join(f"create refs/tags/t{i:04d} {world.base_sha}\n" for i in range(100))
    subprocess.run(
        ["git", "--git-dir", str(world.repo.disk_path), "update-ref", "--stdin"],
        input=lines,
        text=True,
        check=True,
    )
    expected = refs_of(world.repo.disk_path)
    assert len(expected) == 3101
    mirror = tmp_path / "m"
    result = git(
        owner.env,
        "-c",
        "protocol.version=0",
        "clone",
        "--quiet",
        "--mirror",
        owner.ssh_url("owner/project"),
        str(mirror),
    )
    assert result.returncode == 0, result.stderr
    assert refs_of(mirror) == expected
    listed = git(
        owner.env, "-c", "protocol.version=0", "ls-remote", "--heads", owner.ssh_url("owner/project")
    )
    assert len(listed.stdout.splitlines()) == 3001


def test_spellings_of_a_repository_path_and_a_deleted_repository_as_over_http(
    world, ssh_git, git_home, tmp_path
):
    owner = adopt(ssh_git, world.host, git_home, world.owner.user)
    staff = person(ssh_git, world.host, git_home, "staff", is_staff=True)
    for spelling in ("OWNER/Project", "owner/project.git/", "owner/PROJECT.git"):
        over = {}
        for transport, url in (
            ("http", f"http://owner:{owner.token}@{world.host}/{spelling}"),
            ("ssh", f"ssh://{ssh_git.user}@{ssh_git.host}/{spelling}"),
        ):
            result = git(owner.env, "ls-remote", url)
            over[transport] = (result.returncode, result.stdout)
        assert over["ssh"] == over["http"], spelling
        assert over["ssh"][0] == 0 and f"{world.base_sha}\trefs/heads/main" in over["ssh"][1], (
            spelling,
            over,
        )
    # Protocol v1 (v0 with a version line) too.
    cloned = {}
    for transport in TRANSPORTS:
        where = tmp_path / f"v1-{transport}"
        result = git(
            owner.env,
            "-c",
            "protocol.version=1",
            "clone",
            "--quiet",
            owner.url(transport, "owner/project"),
            str(where),
        )
        cloned[transport] = refs_of(where / ".git") if result.returncode == 0 else result.stderr
    assert cloned["ssh"] == cloned["http"] and isinstance(cloned["ssh"], dict), cloned
    # Deleted: staff may still fetch it, nobody pushes to it, its admin no longer reads it.
    lifecycle.repository_soft_delete(repo=world.repo, acting_user=owner.user)
    work = world.owner.work
    world.owner.commit("after the deletion")
    for who in (owner, staff):
        got = {}
        for transport in TRANSPORTS:
            listed = git(who.env, "ls-remote", who.url(transport, "owner/project"))
            pushed = git(who.env, "push", who.url(transport, "owner/project"), "HEAD:main", cwd=work)
            got[transport] = (listed.returncode == 0, listed.stdout, pushed.returncode == 0)
        assert got["ssh"] == got["http"], who.username
        assert got["ssh"][0] == (who is staff) and not got["ssh"][2]
    refused = git(staff.env, "push", staff.ssh_url("owner/project"), "HEAD:main", cwd=work)
    assert hostsite_lines(refused.stderr) == [
        "hostsite: This repository is deleted; restore it before pushing"
    ]
