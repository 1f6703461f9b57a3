"""Fetching from a URL a user gave us without letting it reach the server's own network (SSRF).

The rule: the host must resolve to public addresses only (public_addresses), and the connection
goes to an address that check returned, never to what a second lookup of the name says
(pinned_connection: webhook deliveries, the image proxy, the redirect probe below). For git it
is checked where it matters:

- after DNS resolution, and git is then pinned to the addresses we checked
  (`http.curloptResolve` for http(s), the address itself for git://), so a name that resolves
  to a public address for the check and to 127.0.0.1 for git (DNS rebinding) gets nowhere;
- on every redirect: we follow the redirects of `info/refs` ourselves, checking each hop, and
  git runs against the final URL with redirects off, so a redirect that appears later fails.

Credentials travel in git's environment (GIT_CONFIG_*), never in argv, a URL or a row, and only
to the host they were given for.
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import re
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from repos.errors import InvalidInput

USER_SCHEMES = ("https", "http", "git")
STAFF_SCHEMES = (*USER_SCHEMES, "ssh", "file")
DEFAULT_PORTS = {"https": 443, "http": 80, "git": 9418, "ssh": 22}
MAX_REDIRECTS = 5
PROBE_TIMEOUT = 20
_UNSAFE = re.compile(r"[\x00-\x20\x7f\\\"'<>`]")
Resolver = Callable[..., list]


class SourceRefused(InvalidInput):
    code = "source_refused"


@dataclass(frozen=True)
class Credentials:
    username: str
    secret: str = field(repr=False)

    def basic(self) -> str:
        return "Basic " + base64.b64encode(f"{self.username}:{self.secret}".encode()).decode()


@dataclass(frozen=True)
class Source:
    """What git fetches from, checked: the URL, the `-c` pairs that pin it, and the environment
    that carries credentials. `display_url` is safe to store and show."""

    url: str
    display_url: str
    config: tuple[tuple[str, str], ...] = ()
    protocols: str = "https:http:git"
    secret_env: dict[str, str] = field(default_factory=dict, repr=False)

    def git_args(self) -> list[str]:
        args: list[str] = []
        for key, value in self.config:
            args += ["-c", f"{key}={value}"]
        return args

    def git_env(self) -> dict[str, str]:
        return {"GIT_ALLOW_PROTOCOL": self.protocols, **self.secret_env}


def refuse(message: str) -> SourceRefused:
    return SourceRefused(message, fields={"import_url": ["refused"]})


def public_addresses(
    host: str, port: int, *, allow_private: bool, resolve: Resolver | None = None
) -> list[str]:
    """The addresses `host` resolves to; SourceRefused if any is not public (unless allowed)."""
    resolve = resolve or socket.getaddrinfo
    try:
        infos = resolve(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        raise refuse(f"Cannot resolve {host}.") from None
    addresses = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not allow_private and not address.is_global:
            raise refuse(
                f"{host} resolves to a non-public address ({address}); only public hosts can be reached."
            )
        if str(address) not in addresses:
            addresses.append(str(address))
    if not addresses:
        raise refuse(f"Cannot resolve {host}.")
    return addresses


def split_credentials(url: str) -> tuple[str, Credentials | None]:
    """The URL without its user-info part, and the credentials that part held."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    creds = Credentials(unquote(parts.username or ""), unquote(parts.password or ""))
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), creds


def prepare(
    source: str,
    *,
    staff: bool = False,
    allow_private: bool = False,
    credentials: Credentials | None = None,
    resolve: Resolver | None = None,
    probe: bool = True,
) -> Source:
    """Check a source the user gave and return how git may fetch it; SourceRefused says why not.

    `staff` also allows local paths, file:// and ssh:// (operators importing what is on the
    server). `probe` follows and checks the redirects of an http(s) source before git runs."""
    source = (source or "").strip()
    if not source or len(source) > 2000 or any(ord(c) < 0x20 or ord(c) == 0x7F for c in source):
        raise refuse("Give the URL of a git repository.")
    if "://" not in source:
        return _local(source, staff=staff)
    try:
        parts = urlsplit(source)
        port = parts.port
    except ValueError:
        raise refuse(f"{source[:100]!r} is not a valid URL.") from None
    scheme = parts.scheme.lower()
    allowed = STAFF_SCHEMES if staff else USER_SCHEMES
    if scheme not in allowed:
        raise refuse(f"Only {', '.join(s + '://' for s in allowed)} URLs can be imported, not {scheme}://.")
    if scheme == "file":
        return _local(parts.path, staff=staff)
    url, in_url = split_credentials(source)
    credentials = credentials or in_url
    host = parts.hostname or ""
    if not host or _UNSAFE.search(url) or host.startswith("-"):
        raise refuse(f"{url[:100]!r} is not a valid URL.")
    port = port or DEFAULT_PORTS[scheme]
    if scheme == "ssh":
        # Operators only; ssh resolves the host itself, so it is not pinned. The user part is
        # ssh's login (ssh://git@host/...), not a secret: git keeps it, the display drops it.
        login = f"{parts.username}@" if parts.username else ""
        return Source(url.replace("ssh://", f"ssh://{login}", 1) if login else url, url, protocols="ssh")
    addresses = public_addresses(host, port, allow_private=allow_private, resolve=resolve)
    if scheme == "git":
        if credentials:
            raise refuse("git:// has no authentication; use an https:// URL with credentials.")
        pinned = urlunsplit(("git", _netloc(addresses[0], port), parts.path, "", ""))
        return Source(pinned, url, protocols="git")
    if probe:
        url, addresses, credentials = _follow_redirects(url, addresses, credentials, allow_private, resolve)
    final = urlsplit(url)
    final_host, final_port = final.hostname or "", final.port or DEFAULT_PORTS[final.scheme]
    config = (
        ("http.curloptResolve", f"{final_host}:{final_port}:{','.join(_bracket(a) for a in addresses)}"),
        ("http.followRedirects", "false"),
    )
    secret_env = {}
    if credentials is not None:
        secret_env = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"http.{url}.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: {credentials.basic()}",
        }
    return Source(url, url, config, protocols="https:http", secret_env=secret_env)


def _local(path: str, *, staff: bool) -> Source:
    if not staff:
        raise refuse(
            "Give an https://, http:// or git:// URL; local paths can be imported by site staff only."
        )
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise refuse(f"{path!r} is neither a URL nor an existing path.")
    return Source(str(resolved), str(resolved), protocols="file")


def _bracket(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _netloc(address: str, port: int) -> str:
    return f"{_bracket(address)}:{port}"


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """Connects to a checked address while verifying the certificate for the host name."""

    def __init__(self, host: str, address: str, port: int, **kwargs):
        super().__init__(host, port, context=ssl.create_default_context(), **kwargs)
        self._address = address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, address: str, port: int, **kwargs):
        super().__init__(host, port, **kwargs)
        self._address = address

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


SUFFIX = "/info/refs?service=git-upload-pack"


def _follow_redirects(url, addresses, credentials, allow_private, resolve):
    """Ask for info/refs as git would, following each redirect only to a checked public host.

    Returns the final base URL, its addresses, and the credentials if they still apply (they
    are sent to the host they were given for, never to another one)."""
    origin = urlsplit(url).hostname
    for _ in range(MAX_REDIRECTS + 1):
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORTS[parts.scheme]
        cls = _PinnedHTTPSConnection if parts.scheme == "https" else _PinnedHTTPConnection
        connection = cls(parts.hostname, addresses[0], port, timeout=PROBE_TIMEOUT)
        headers = {"User-Agent": "git/2 (hostsite import)", "Git-Protocol": "version=2"}
        if credentials is not None and parts.hostname == origin:
            headers["Authorization"] = credentials.basic()
        path = (parts.path.rstrip("/") or "") + SUFFIX
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            status, location = response.status, response.getheader("Location")
            response.read(65536)
        except ssl.SSLError as exc:
            raise refuse(f"TLS with {parts.hostname} failed: {exc.reason or exc}.") from None
        except (OSError, http.client.HTTPException) as exc:
            raise refuse(f"Cannot reach {parts.hostname}: {exc}.") from None
        finally:
            connection.close()
        if status in (301, 302, 303, 307, 308) and location:
            target = urljoin(parts.scheme + "://" + parts.netloc + path, location)
            target_parts = urlsplit(target)
            if target_parts.scheme not in ("http", "https"):
                raise refuse("The source redirects to a URL that is not http(s).")
            if parts.scheme == "https" and target_parts.scheme == "http":
                raise refuse("The source redirects from https to plain http.")
            base = target.split("?", 1)[0]
            if not base.endswith("/info/refs"):
                raise refuse("The source redirects somewhere that is not a git repository.")
            url = base[: -len("/info/refs")]
            if target_parts.username or target_parts.password or _UNSAFE.search(url):
                raise refuse("The source redirects to an invalid URL.")
            if target_parts.hostname != origin:
                credentials = None
            addresses = public_addresses(
                target_parts.hostname or "",
                target_parts.port or DEFAULT_PORTS[target_parts.scheme],
                allow_private=allow_private,
                resolve=resolve,
            )
            continue
        if status == 401:
            raise refuse(
                "The source needs credentials."
                if credentials is None
                else "The source refused the credentials."
            )
        if status in (403, 404):
            raise refuse(f"No repository at {url} (HTTP {status}).")
        if status >= 400:
            raise refuse(f"The source answered HTTP {status}.")
        return url, addresses, credentials
    raise refuse(f"The source redirects more than {MAX_REDIRECTS} times.")


def pinned_connection(
    scheme: str, host: str, address: str, port: int, *, timeout: float
) -> http.client.HTTPConnection:
    """An HTTP(S) connection to `address`, a checked address of `host` (TLS verified for `host`):
    what any fetch of a user-given URL uses, so DNS cannot answer differently afterwards."""
    cls = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
    return cls(host, address, port, timeout=timeout)
