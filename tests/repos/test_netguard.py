"""The SSRF guard of imports and mirrors (repos.netguard), in-process with
IMPORT_ALLOW_PRIVATE_SOURCES off: private and local addresses, DNS rebinding, redirects,
schemes and credentials.

Redirect tests run a small HTTP(S) server on loopback that plays several hosts. The names
resolve (through the injected resolver, as DNS would) to documentation-free public addresses,
and connections to those addresses are routed to the loopback server: the guard's logic runs
as it would on the internet, only the wire is short. The last test proves git really connects
to the address the guard pinned, against the live server.
"""

from __future__ import annotations

import contextlib
import datetime
import http.server
import ipaddress
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from repos import fetching, netguard
from repos.netguard import SourceRefused

ORIGIN, OTHER, INTERNAL = "origin.example", "other.example", "intranet.example"
PUBLIC = {ORIGIN: "93.184.216.34", OTHER: "93.184.216.35", "rebind.example": "93.184.216.36"}
SECRET = "s3cret-4711"


def resolver(table: dict[str, list[str] | str]):
    def resolve(host, port, **_):
        answer = table.get(host)
        if answer is None:
            with contextlib.suppress(ValueError):
                answer = str(ipaddress.ip_address(host))  # an address literal needs no DNS
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addresses = [answer] if isinstance(answer, str) else answer
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    return resolve


NAMES = resolver({**PUBLIC, INTERNAL: "10.0.0.7", "mixed.example": ["93.184.216.40", "192.168.1.9"]})


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


# --- a loopback server playing several hosts -----------------------------------------------------


class Hosts:
    """Routes: (host, path) -> (status, location). Every request is recorded."""

    def __init__(self):
        self.routes: dict[tuple[str, str], tuple[int, str | None]] = {}
        self.seen: list[dict] = []


def _handler(hosts: Hosts):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            hosts.seen.append(
                {"host": host, "path": self.path, "authorization": self.headers.get("Authorization")}
            )
            status, location = hosts.routes.get((host, self.path.split("?")[0]), (404, None))
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            body = b"001e# service=git-upload-pack\n0000" if status == 200 else b""
            self.send_header("Content-Type", "application/x-git-upload-pack-advertisement")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate it signed for the test's names (cryptography is a dependency)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    names = [x509.DNSName(n) for n in (ORIGIN, OTHER)]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ORIGIN)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca_path, cert_path, key_path


@pytest.fixture
def hosts(monkeypatch, tmp_path):
    """One plain and one TLS server on loopback; PUBLIC addresses are routed to them."""
    hosts = Hosts()
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(hosts))
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(hosts))
    ca, cert, key = _certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    tls.socket = context.wrap_socket(tls.socket, server_side=True)
    servers = {80: plain.server_address[1], 443: tls.server_address[1]}
    for server in (plain, tls):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    real_connect, real_context = socket.create_connection, ssl.create_default_context
    public = set(PUBLIC.values())

    def connect(address, *args, **kwargs):
        host, port = address
        if host in public:
            return real_connect(("127.0.0.1", servers[port]), *args, **kwargs)
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(netguard.socket, "create_connection", connect)
    monkeypatch.setattr(netguard.ssl, "create_default_context", lambda *a, **k: real_context(cafile=str(ca)))
    yield hosts
    for server in (plain, tls):
        server.shutdown()
        server.server_close()


INFO = "/info/refs"


def test_a_plain_source_is_probed_at_the_pinned_address(hosts):
    hosts.routes[(ORIGIN, "/x.git" + INFO)] = (200, None)
    source = netguard.prepare(f"http://{ORIGIN}/x.git", resolve=NAMES)
    assert source.url == f"http://{ORIGIN}/x.git" and hosts.seen[0]["host"] == ORIGIN
    assert ("http.curloptResolve", f"{ORIGIN}:80:93.184.216.34") in source.config


def test_a_redirect_to_a_private_address_is_refused(hosts):
    hosts.routes[(ORIGIN, "/a.git" + INFO)] = (
        302,
        "http://127.0.0.1:9/a.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[(ORIGIN, "/b.git" + INFO)] = (
        301,
        f"http://{INTERNAL}/b.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[(ORIGIN, "/c.git" + INFO)] = (307, "http://169.254.169.254/latest/info/refs")
    for name, private in (("a", "127.0.0.1"), ("b", "10.0.0.7"), ("c", "169.254.169.254")):
        with pytest.raises(SourceRefused, match=f"non-public address \\({private}\\)"):
            netguard.prepare(f"http://{ORIGIN}/{name}.git", resolve=NAMES)
    assert {seen["host"] for seen in hosts.seen} == {ORIGIN}


def test_credentials_follow_a_redirect_on_the_same_host_only(hosts):
    hosts.routes[(ORIGIN, "/moved.git" + INFO)] = (
        301,
        f"https://{ORIGIN}/new.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[(ORIGIN, "/new.git" + INFO)] = (200, None)
    creds = netguard.Credentials("alice", SECRET)
    source = netguard.prepare(f"https://{ORIGIN}/moved.git", resolve=NAMES, credentials=creds)
    assert source.url == f"https://{ORIGIN}/new.git"
    assert source.secret_env["GIT_CONFIG_KEY_0"] == f"http.https://{ORIGIN}/new.git.extraHeader"
    assert all(seen["authorization"] == creds.basic() for seen in hosts.seen)

    hosts.seen.clear()
    hosts.routes[(ORIGIN, "/away.git" + INFO)] = (
        302,
        f"https://{OTHER}/away.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[(OTHER, "/away.git" + INFO)] = (200, None)
    source = netguard.prepare(f"https://{ORIGIN}/away.git", resolve=NAMES, credentials=creds)
    assert source.url == f"https://{OTHER}/away.git" and source.secret_env == {}
    assert ("http.curloptResolve", f"{OTHER}:443:93.184.216.35") in source.config
    assert [(s["host"], s["authorization"]) for s in hosts.seen] == [(ORIGIN, creds.basic()), (OTHER, None)]


def test_https_to_http_and_non_http_redirects_are_refused(hosts):
    hosts.routes[(ORIGIN, "/down.git" + INFO)] = (302, f"http://{ORIGIN}/down.git/info/refs")
    with pytest.raises(SourceRefused, match="from https to plain http"):
        netguard.prepare(f"https://{ORIGIN}/down.git", resolve=NAMES)
    for target in ("file:///etc/passwd", "ftp://other.example/x/info/refs", f"https://{OTHER}/login"):
        hosts.routes[(ORIGIN, "/odd.git" + INFO)] = (302, target)
        with pytest.raises(SourceRefused, match=r"not http|not a git repository"):
            netguard.prepare(f"https://{ORIGIN}/odd.git", resolve=NAMES)


def test_more_than_five_redirects_are_refused(hosts):
    for hop in range(7):
        hosts.routes[(ORIGIN, f"/r{hop}{INFO}")] = (302, f"/r{hop + 1}{INFO}")
    hosts.routes[(ORIGIN, f"/r7{INFO}")] = (200, None)
    with pytest.raises(SourceRefused, match="more than 5 times"):
        netguard.prepare(f"http://{ORIGIN}/r0", resolve=NAMES)
    assert netguard.prepare(f"http://{ORIGIN}/r2", resolve=NAMES).url == f"http://{ORIGIN}/r7"  # five hops


def test_missing_and_protected_sources_say_so(hosts):
    hosts.routes[(ORIGIN, "/private.git" + INFO)] = (401, None)
    with pytest.raises(SourceRefused, match="needs credentials"):
        netguard.prepare(f"http://{ORIGIN}/private.git", resolve=NAMES)
    with pytest.raises(SourceRefused, match="refused the credentials"):
        netguard.prepare(
            f"http://{ORIGIN}/private.git", resolve=NAMES, credentials=netguard.Credentials("a", "b")
        )
    with pytest.raises(SourceRefused, match=r"No repository at http://origin.example/none.git \(HTTP 404\)"):
        netguard.prepare(f"http://{ORIGIN}/none.git", resolve=NAMES)


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
    from repos import services
    from tests import live
    from tests.factories import UserFactory
    from tests.gitutil import make_history

    name = "hostsite-import.invalid"
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo(name, 80)
    expected = make_history(tmp_path / "src", git_home)
    repo = services.repository_create(
        owner=UserFactory(username="pinned"), name="p", import_from=str(tmp_path / "src")
    )
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
