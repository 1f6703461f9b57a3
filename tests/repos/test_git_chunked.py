"""Malformed chunked request bodies, sent by hand over a raw socket to the real web server
(git's client always frames its bodies well): a fetch or a push whose body cannot be read
answers 400 with the reason and starts no git; one that breaks after git started ends the push
with nothing changed; Django's own pages and the API answer them without a 500. The server
runs with a git that logs every run, and its log must show no traceback."""

from __future__ import annotations

import base64
import os
import subprocess

import pytest

from gitcore import pktline
from repos.models import Push
from tests import live
from tests.pushers import World
from tests.repos.rawhttp import BROKEN, LogTail, chunk, send

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def counted_web(live_env, tmp_path_factory):
    """The web server, running git through a wrapper that logs each run's arguments."""
    logs = tmp_path_factory.mktemp("chunked-web")
    runs = logs / "git-runs.log"
    wrapper = logs / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {runs}\nexec git "$@"\n')
    wrapper.chmod(0o755)
    port = live.free_port()
    web = live.start_web({**live_env, "GIT_BINARY": str(wrapper)}, port, logs)
    web.url = f"http://127.0.0.1:{port}"
    web.runs = runs
    yield web
    web.stop()


def service_runs(web) -> int:
    """How many upload-pack and receive-pack processes the server has started so far."""
    if not web.runs.exists():
        return 0
    return sum(1 for line in web.runs.read_text().splitlines() if "-pack --stateless-rpc" in line)


@pytest.fixture
def world(counted_web, tmp_path, git_home):
    return World(counted_web.url, tmp_path, git_home)


WANT_HEAD = "want {head} ofs-delta\n"


@pytest.mark.parametrize("broken", list(BROKEN), ids=list(BROKEN))
def test_a_fetch_with_a_malformed_chunked_body_is_400_and_starts_no_git(counted_web, world, broken):
    start = pktline.encode(WANT_HEAD.format(head=world.base_sha)) + pktline.FLUSH + pktline.encode("done\n")
    before, log = service_runs(counted_web), LogTail(counted_web)
    status, text = send(
        counted_web.url,
        f"/{world.repo.full_name}.git/git-upload-pack",
        {"Content-Type": "application/x-git-upload-pack-request"},
        chunk(start) + BROKEN[broken],
    )
    assert status == 400, (status, text)
    assert text.startswith(b"malformed request body: "), text
    assert service_runs(counted_web) == before
    # A well-framed body on the same server still fetches.
    status, text = send(
        counted_web.url,
        f"/{world.repo.full_name}.git/git-upload-pack",
        {"Content-Type": "application/x-git-upload-pack-request"},
        chunk(start) + b"0\r\n\r\n",
    )
    assert status == 200 and b"PACK" in text
    assert service_runs(counted_web) == before + 1
    assert log.clean(), log.text()


def _push_commands(world) -> tuple[str, bytes, bytes]:
    """A new commit on top of main: (its id, the command list, the pack). The pack is large
    (incompressible bytes): gunicorn reads a body ahead by 1 KiB, so the framing after a small
    pack would break the command list's read already, before git starts."""
    owner = world.owner
    (owner.work / "noise.bin").write_bytes(os.urandom(256 * 1024))
    owner.git("add", "noise.bin", check=True)
    new = owner.commit("pushed in chunks")
    pack = subprocess.run(
        ["git", "-C", str(owner.work), "pack-objects", "--revs", "--stdout"],
        input=f"{new}\n^{world.base_sha}\n".encode(),
        capture_output=True,
        check=True,
        env=owner.env,
    ).stdout
    commands = pktline.encode(f"{world.base_sha} {new} refs/heads/main\0report-status\n") + pktline.FLUSH
    return new, commands, pack


def _main(world) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(world.repo.disk_path), "rev-parse", "refs/heads/main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _receive(world) -> dict[str, str]:
    owner = world.owner
    basic = base64.b64encode(f"{owner.username}:{owner.token}".encode()).decode()
    return {"Content-Type": "application/x-git-receive-pack-request", "Authorization": f"Basic {basic}"}


@pytest.mark.parametrize("broken", list(BROKEN), ids=list(BROKEN))
def test_a_push_whose_command_list_is_malformed_is_400_and_starts_no_git(counted_web, world, broken):
    _new, commands, _pack = _push_commands(world)
    pushes = Push.objects.filter(repository=world.repo).count()
    before, log = service_runs(counted_web), LogTail(counted_web)
    # The command list's first packet, then the broken framing: git's commands never end.
    status, text = send(
        counted_web.url,
        f"/{world.repo.full_name}.git/git-receive-pack",
        _receive(world),
        chunk(commands[:20]) + BROKEN[broken],
    )
    assert status == 400, (status, text)
    assert text.startswith(b"malformed request body: "), text
    assert service_runs(counted_web) == before
    assert _main(world) == world.base_sha
    assert Push.objects.filter(repository=world.repo).count() == pushes
    assert log.clean(), log.text()


@pytest.mark.parametrize("broken", ["size zz", "missing CRLF after a chunk", "cut short", "bad trailer"])
def test_a_push_whose_pack_breaks_off_changes_nothing(counted_web, world, broken):
    """The command list arrives whole, so git starts; the pack's framing breaks: git is stopped
    before it takes the push, and the server logs no error."""
    new, commands, pack = _push_commands(world)
    pushes = Push.objects.filter(repository=world.repo).count()
    before, log = service_runs(counted_web), LogTail(counted_web)
    status, text = send(
        counted_web.url,
        f"/{world.repo.full_name}.git/git-receive-pack",
        _receive(world),
        chunk(commands) + chunk(pack[:-20]) + BROKEN[broken],
    )
    assert status == 200, text  # git's answer had begun: it ends without a report
    assert b"ok refs/heads/main" not in text and b"unpack ok" not in text
    assert service_runs(counted_web) == before + 1
    assert _main(world) == world.base_sha
    assert Push.objects.filter(repository=world.repo).count() == pushes
    assert log.clean(), log.text()

    # The same push, well framed, goes through.
    status, text = send(
        counted_web.url,
        f"/{world.repo.full_name}.git/git-receive-pack",
        _receive(world),
        chunk(commands) + chunk(pack) + b"0\r\n\r\n",
    )
    assert status == 200 and b"ok refs/heads/main" in text, text
    assert _main(world) == new


def test_django_pages_and_the_api_answer_a_malformed_chunked_body_without_a_500(counted_web, world):
    """Django reads no chunked body (it goes by Content-Length): the form and the API see an
    empty one, and the server drops the connection's broken remainder."""
    from tests.repos.test_live_http import Browser

    log = LogTail(counted_web)
    browser = Browser(counted_web.url)
    assert browser.request("GET", "/login")[0] == 200
    csrf = next(c.value for c in browser.jar if c.name == "csrftoken")
    form = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": f"csrftoken={csrf}",
        "X-CSRFToken": csrf,
        "Referer": counted_web.url + "/login",
    }
    status, _ = send(counted_web.url, "/login", form, chunk(b"username=owner&") + BROKEN["size zz"])
    assert status == 200  # the sign-in form again, with nothing signed in
    api = {"Content-Type": "application/json", "Authorization": f"Bearer {world.owner.token}"}
    status, text = send(counted_web.url, "/api/v1/repos", api, chunk(b'{"name": ') + BROKEN["size zz"])
    assert status == 400, text
    assert log.clean(), log.text()
