"""Hostile input to the git endpoints: paths, pkt-lines, gzip bodies, symlinks."""

from __future__ import annotations

import base64
import gzip
import http.client
import subprocess
import zlib

import pytest

from gitcore import pktline
from repos import services
from repos.models import Push
from tests.factories import UserFactory
from tests.gitutil import git

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
ZERO = "0" * 40


@pytest.fixture
def setup(live_server_url, tmp_path, git_home):
    owner = UserFactory(username="owner")
    token = services.token_create(user=owner, scope="write")[1]
    public = services.repository_create(owner=owner, name="public-repo")
    secret_owner = UserFactory(username="other")
    services.repository_create(owner=secret_owner, name="secret", visibility="private")
    work = tmp_path / "work"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    (work / "f").write_text("hello\n")
    git(git_home, "add", "f", cwd=work)
    git(git_home, "commit", "--quiet", "-m", "one", cwd=work)
    host = live_server_url.removeprefix("http://")
    git(git_home, "push", f"http://owner:{token}@{host}/owner/public-repo.git", "main", cwd=work)
    head = git(git_home, "rev-parse", "HEAD", cwd=work).stdout.strip()
    auth = "Basic " + base64.b64encode(f"owner:{token}".encode()).decode()
    return {"host": host, "auth": auth, "repo": public, "work": work, "head": head, "env": git_home}


def raw_request(setup, method: str, target: str, body: bytes = b"", headers: dict | None = None):
    host, port = setup["host"].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        for key, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            conn.putheader(key, value)
        conn.endheaders(body or None)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


HOSTILE_PATHS = [
    "/../../../../etc/passwd",
    "/owner/../../../../etc/passwd",
    "/owner/public-repo.git/../../../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/owner/%2e%2e%2f%2e%2e%2fetc/info/refs?service=git-upload-pack",
    "/owner/..%2f..%2fetc/info/refs?service=git-upload-pack",
    "//etc/passwd",
    "//owner/public-repo.git/info/refs?service=git-upload-pack",
    "/owner//public-repo.git/info/refs?service=git-upload-pack",
    "http://evil.example/etc/passwd",
    "/etc/passwd/info/refs?service=git-upload-pack",
    "/owner/public-repo.git/HEAD",
    "/owner/public-repo.git/config",
    "/owner/public-repo.git/objects/info/packs",
    "/owner/public-repo.git/info/refs",
    "/owner/public-repo.git/info/refs?service=git-upload-archive",
    "/owner/public-repo.git/info/refs?service=../../bin/sh",
    "/other/secret.git/info/refs?service=git-upload-pack",
    "/OTHER/Secret/info/refs?service=git-upload-pack",
    "/owner/public-repo%00.git/info/refs?service=git-upload-pack",
]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_hostile_paths_answer_4xx_and_read_nothing(setup, path):
    status, body = raw_request(setup, "GET", path)
    assert 400 <= status < 500, (path, status, body[:200])
    assert b"root:" not in body and b"[core]" not in body and setup["head"].encode() not in body


def test_symlink_inside_repo_root_is_not_followed(setup, tmp_path):
    """A repository directory replaced by a symlink to a repository outside REPO_ROOT."""
    outside = tmp_path / "outside.git"
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", str(setup["work"]), str(outside)], check=True, env=setup["env"]
    )
    path = setup["repo"].disk_path
    path.rename(path.with_name("moved-away.git"))
    path.symlink_to(outside)
    status, body = raw_request(setup, "GET", "/owner/public-repo.git/info/refs?service=git-upload-pack")
    assert status == 404
    assert setup["head"].encode() not in body


UPLOAD = {"Content-Type": "application/x-git-upload-pack-request"}
RECEIVE = {"Content-Type": "application/x-git-receive-pack-request"}


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"zzzz",
        b"00",
        b"0003",
        b"0004",
        b"0009want",
        b"ffffwant",
        b"0032want " + b"a" * 10,
        pktline.encode("want " + "a" * 40 + "\n"),  # no flush: the request is cut short
        pktline.encode("hello world\n") + pktline.FLUSH,
        pktline.encode("want " + "a" * 40 + "\n") + b"00",
    ],
)
def test_malformed_upload_pack_requests_are_400(setup, body):
    status, text = raw_request(setup, "POST", "/owner/public-repo.git/git-upload-pack", body, UPLOAD)
    assert status == 400, (status, text)
    assert b"malformed request" in text


def test_malformed_protocol_v2_request_is_400(setup):
    body = pktline.encode("command=ls-refs\n") + pktline.DELIM
    headers = {**UPLOAD, "Git-Protocol": "version=2"}
    status, _ = raw_request(setup, "POST", "/owner/public-repo.git/git-upload-pack", body, headers)
    assert status == 400
    status, _ = raw_request(
        setup, "POST", "/owner/public-repo.git/git-upload-pack", body + pktline.FLUSH, headers
    )
    assert status == 200


@pytest.mark.parametrize(
    "protocol", ["version=2 X: y", "version=2;rm -rf /", "x" * 300, "é", "version=2$(id)"]
)
def test_bad_git_protocol_header_is_400(setup, protocol):
    headers = {"Git-Protocol": protocol.encode("latin-1", "replace").decode("latin-1")}
    status, _ = raw_request(
        setup, "GET", "/owner/public-repo.git/info/refs?service=git-upload-pack", headers=headers
    )
    assert status == 400


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"0000garbage",  # no commands, then junk
        pktline.encode(f"{ZERO} {'b' * 40} refs/heads/x\0report-status"),  # no flush
        pktline.encode(f"{ZERO} nothex refs/heads/x\0report-status") + pktline.FLUSH,
        pktline.encode(f"{ZERO} {'b' * 40}\0report-status") + pktline.FLUSH,
        pktline.encode(f"{ZERO} {'b' * 40} refs/heads/x") + pktline.DELIM,
        b"00ffgarbage",
    ],
)
def test_malformed_receive_pack_requests_are_400(setup, body):
    headers = {**RECEIVE, "Authorization": setup["auth"]}
    status, text = raw_request(setup, "POST", "/owner/public-repo.git/git-receive-pack", body, headers)
    assert status == 400, (status, text)
    assert not Push.objects.filter(repository=setup["repo"]).exclude(pusher_name="owner").exists()
    assert Push.objects.filter(repository=setup["repo"]).count() == 1  # only the setup push


def test_bare_flush_probe_is_accepted(setup):
    # What git sends before streaming a large push, to settle authentication first.
    headers = {**RECEIVE, "Authorization": setup["auth"]}
    status, text = raw_request(setup, "POST", "/owner/public-repo.git/git-receive-pack", b"0000", headers)
    assert status == 200 and text == b""


def test_truncated_pack_is_refused_and_records_nothing(setup):
    env, work = setup["env"], setup["work"]
    git(env, "commit", "--quiet", "--allow-empty", "-m", "two", cwd=work)
    new = git(env, "rev-parse", "HEAD", cwd=work).stdout.strip()
    pack = subprocess.run(
        ["git", "-C", str(work), "pack-objects", "--revs", "--stdout"],
        input=f"{new}\n^{setup['head']}\n".encode(),
        capture_output=True,
        check=True,
        env=env,
    ).stdout
    body = (
        pktline.encode(f"{setup['head']} {new} refs/heads/main\0report-status") + pktline.FLUSH + pack[:-10]
    )
    headers = {**RECEIVE, "Authorization": setup["auth"]}
    status, text = raw_request(setup, "POST", "/owner/public-repo.git/git-receive-pack", body, headers)
    assert status == 200 and b"unpack " in text and b"unpack ok" not in text
    assert Push.objects.filter(repository=setup["repo"]).count() == 1


def test_wrong_content_type_and_encoding(setup):
    status, _ = raw_request(
        setup, "POST", "/owner/public-repo.git/git-upload-pack", b"0000", {"Content-Type": "text/plain"}
    )
    assert status == 415
    status, _ = raw_request(
        setup, "POST", "/owner/public-repo.git/git-upload-pack", b"0000", {**UPLOAD, "Content-Encoding": "br"}
    )
    assert status == 415


def _receive_request(setup, ref: str) -> bytes:
    env, work = setup["env"], setup["work"]
    (work / "g").write_text("gzip me\n")
    git(env, "add", "g", cwd=work)
    git(env, "commit", "--quiet", "-m", "gz", cwd=work)
    new = git(env, "rev-parse", "HEAD", cwd=work).stdout.strip()
    pack = subprocess.run(
        ["git", "-C", str(work), "pack-objects", "--revs", "--stdout"],
        input=f"{new}\n^{setup['head']}\n".encode(),
        capture_output=True,
        check=True,
        env=env,
    ).stdout
    return new, pktline.encode(f"{ZERO} {new} {ref}\0report-status") + pktline.FLUSH + pack


def test_push_with_gzip_body(setup):
    new, body = _receive_request(setup, "refs/heads/gzipped")
    headers = {**RECEIVE, "Authorization": setup["auth"], "Content-Encoding": "gzip"}
    status, text = raw_request(
        setup, "POST", "/owner/public-repo.git/git-receive-pack", gzip.compress(body), headers
    )
    assert status == 200, text
    assert b"unpack ok" in text and b"ok refs/heads/gzipped" in text
    out = subprocess.run(
        ["git", "--git-dir", str(setup["repo"].disk_path), "rev-parse", "refs/heads/gzipped"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == new
    push = Push.objects.filter(repository=setup["repo"]).latest("id")
    assert [(u.ref, u.new) for u in push.ref_updates.all()] == [("refs/heads/gzipped", new)]


def test_fetch_with_gzip_body(setup):
    body = pktline.encode(f"want {setup['head']} ofs-delta\n") + pktline.FLUSH + pktline.encode("done\n")
    status, text = raw_request(
        setup,
        "POST",
        "/owner/public-repo.git/git-upload-pack",
        gzip.compress(body),
        {**UPLOAD, "Content-Encoding": "gzip"},
    )
    assert status == 200
    assert b"NAK" in text and b"PACK" in text


def test_gzip_bomb_is_413_and_starts_nothing(setup):
    # 300 MiB of zeros compress to ~300 KiB; the cap is 256 MiB inflated.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1024 * 1024)
    bomb = b"".join(compressor.compress(chunk) for _ in range(300)) + compressor.flush()
    assert len(bomb) < 1024 * 1024
    status, text = raw_request(
        setup, "POST", "/owner/public-repo.git/git-upload-pack", bomb, {**UPLOAD, "Content-Encoding": "gzip"}
    )
    assert status == 413 and b"inflates to more than" in text


# Named: the truncated body carries gzip's timestamp, and xdist needs the same ids in every worker.
@pytest.mark.parametrize(
    "body", [b"not gzip at all", gzip.compress(b"0000")[:-6]], ids=["not gzip", "truncated gzip"]
)
def test_invalid_or_truncated_gzip_is_400(setup, body):
    status, _ = raw_request(
        setup, "POST", "/owner/public-repo.git/git-upload-pack", body, {**UPLOAD, "Content-Encoding": "gzip"}
    )
    assert status == 400
