"""The SSRF guard of imports and mirrors (repos.netguard), in-process with
IMPORT_ALLOW_PRIVATE_SOURCES off: private and local addresses, DNS rebinding, schemes and
credentials. Redirects are in test_netguard_redirects.py. The last test proves git really
connects to the address the guard pinned, against the live server.
"""

from __future__ import annotations

import socket
import subprocess

import pytest

from repos import netguard
from repos.netguard import SourceRefused
from sources import fetching
from tests.repos.netnames import INTERNAL, NAMES, ORIGIN, SECRET, resolver

# --- addresses -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/x.git",
        "http://127.1/x.git",
        "http://2130706433/x.git",
        "http://localhost/x.git",
        "http://[::1]/x.git",
        "http://[::ffff:127.0.0.1]/x.git",
        "http://0.0.0.0/x.git",
        "http://169.254.169.254/latest/meta-data",
        "http://[fe80::1]/x.git",
        "http://10.1.2.3/x.git",
        "http://172.16.0.1/x.git",
        "http://192.168.1.1/x.git",
        "http://100.64.0.1/x.git",
        "http://[fd00::1]/x.git",
        "https://[fc12:3456::1]:8443/x.git",
        "git://127.0.0.1/x.git",
        "git://[::1]/x.git",
    ],
)
def test_loopback_link_local_private_and_unique_local_addresses_are_refused(url):
    with pytest.raises(SourceRefused, match="non-public address"):
        netguard.prepare(url)


def test_names_that_resolve_to_a_private_address_are_refused():
    with pytest.raises(
        SourceRefused, match=r"intranet\.example resolves to a non-public address \(10\.0\.0\.7\)"
    ):
        netguard.prepare(f"https://{INTERNAL}/x.git", resolve=NAMES, probe=False)
    with pytest.raises(SourceRefused, match=r"192\.168\.1\.9"):  # one private answer among public ones
        netguard.prepare("https://mixed.example/x.git", resolve=NAMES, probe=False)
    with pytest.raises(SourceRefused, match="Cannot resolve"):
        netguard.prepare("https://nowhere.example/x.git", resolve=NAMES, probe=False)
    # Operators (and the live tests) may allow private sources.
    assert netguard.prepare(f"https://{INTERNAL}/x.git", resolve=NAMES, probe=False, allow_private=True)


def test_dns_rebinding_gets_the_checked_address_pinned():
    """The name answers a public address to the check, then 127.0.0.1: git never asks again."""
    answers = ["93.184.216.34", "127.0.0.1"]
    calls = []

    def rebinding(host, port, **_):
        calls.append(host)
        address = answers[min(len(calls), len(answers)) - 1]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    source = netguard.prepare("https://rebind.example/x.git", resolve=rebinding, probe=False)
    assert calls == ["rebind.example"]
    assert source.config == (
        ("http.curloptResolve", "rebind.example:443:93.184.216.34"),
        ("http.followRedirects", "false"),
    )
    assert "http.curloptResolve=rebind.example:443:93.184.216.34" in source.git_args()
    calls.clear()
    source = netguard.prepare("git://rebind.example/x.git", resolve=rebinding, probe=False)
    assert (
        source.url == "git://93.184.216.34:9418/x.git" and source.display_url == "git://rebind.example/x.git"
    )
    assert calls == ["rebind.example"]


# --- schemes and credentials -------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "file:///etc",
        "ext::sh -c touch% /tmp/pwned",
        "ssh://git@example.org/x.git",
        "/srv/repos/x.git",
        "../x.git",
        "git@example.org:x.git",
        "fd::x",
        "ftp://example.org/x.git",
        "javascript:alert(1)",
        "",
        "http://-oProxyCommand=x/",
        "http://exa\nmple.org/x",
        'http://example.org/"x',
        "http://" + "a" * 2000,
    ],
)
def test_only_https_http_and_git_urls_for_users(source, tmp_path):
    with pytest.raises(SourceRefused):
        netguard.prepare(source, resolve=NAMES, probe=False)


def test_staff_may_use_local_paths_file_and_ssh_but_never_ext(tmp_path):
    (tmp_path / "r.git").mkdir()
    assert netguard.prepare(f"file://{tmp_path}/r.git", staff=True).protocols == "file"
    assert netguard.prepare(str(tmp_path / "r.git"), staff=True).url == str(tmp_path / "r.git")
    ssh = netguard.prepare("ssh://git@example.org:2222/x.git", staff=True)
    assert (ssh.url, ssh.display_url, ssh.protocols) == (
        "ssh://git@example.org:2222/x.git",
        "ssh://example.org:2222/x.git",
        "ssh",
    )
    for source in ("ext::sh -c touch% /tmp/pwned", "ext::ssh host", f"{tmp_path}/missing"):
        with pytest.raises(SourceRefused):
            netguard.prepare(source, staff=True)


def test_credentials_in_a_url_are_moved_out_of_it():
    source = netguard.prepare(f"https://alice:{SECRET}@{ORIGIN}/x.git", resolve=NAMES, probe=False)
    assert source.url == source.display_url == f"https://{ORIGIN}/x.git"
    assert SECRET not in repr(source) and SECRET not in " ".join(source.git_args())
    header = source.secret_env["GIT_CONFIG_VALUE_0"]
    assert header == "Authorization: " + netguard.Credentials("alice", SECRET).basic()
    with pytest.raises(SourceRefused, match="git:// has no authentication"):
        netguard.prepare(f"git://alice:{SECRET}@{ORIGIN}/x.git", resolve=NAMES, probe=False)
    url, creds = netguard.split_credentials("https://a%40b:p%3Aw@[2606:4700::1]:8443/x?y")
    assert (url, creds.username, creds.secret) == ("https://[2606:4700::1]:8443/x?y", "a@b", "p:w")


# --- git really uses the pin ---------------------------------------------------------------------


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_git_connects_to_the_pinned_address_of_a_name_that_does_not_resolve(live_env, tmp_path, git_home):
    """hostsite-import.invalid has no address at all; pinned to 127.0.0.1, where a live server
    (gunicorn, told to accept that Host) listens, git lists and fetches through the pin: git
    uses the address the guard checked and never resolves the name itself."""
    from sources import importing
    from tests import live
    from tests.factories import UserFactory
    from tests.gitutil import make_history

    name = "hostsite-import.invalid"
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo(name, 80)
    expected = make_history(tmp_path / "src", git_home)
    repo = importing.import_now(
        owner=UserFactory(username="pinned"), name="p", source=str(tmp_path / "src")
    ).repository
    port = live.free_port()
    (tmp_path / "logs").mkdir()
    web = live.start_web({**live_env, "ALLOWED_HOSTS": f"127.0.0.1,{name}"}, port, tmp_path / "logs")
    try:
        url = f"http://{name}:{port}/{repo.full_name}.git"
        unpinned = subprocess.run(["git", "ls-remote", url], env=git_home, capture_output=True, text=True)
        assert unpinned.returncode != 0 and "resolve" in unpinned.stderr.lower()

        loopback = resolver({name: "127.0.0.1"})
        with pytest.raises(SourceRefused, match="non-public"):
            netguard.prepare(url, resolve=loopback)
        source = netguard.prepare(url, resolve=loopback, allow_private=True)
        assert ("http.curloptResolve", f"{name}:{port}:127.0.0.1") in source.config
        remote = fetching.list_remote(source)
        assert remote.head == "trunk" and {r: remote.refs[r] for r in expected} == expected
        target = tmp_path / "target.git"
        subprocess.run(["git", "init", "--quiet", "--bare", str(target)], check=True, env=git_home)
        fetching.fetch(target, source, ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"])
    finally:
        web.stop()
    out = subprocess.run(
        ["git", "--git-dir", str(target), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert dict(line.split(" ", 1) for line in out.splitlines()) == expected
