"""The servers hostsite's smart HTTP is compared with: nginx + fcgiwrap + git http-backend
(Debian's packages) and `git daemon`, each on a copy of the same repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness.common import GIT, Git, SetupError, base_env, say
from bench.harness.procs import Processes, free_port, wait_for_port


@dataclass
class Server:
    key: str
    label: str
    url: str
    fetch_dir: Path | None = None
    samples: dict[str, list] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


_SBIN = "/usr/sbin:/usr/bin:/sbin:/bin"
# How to tell each Debian package the benchmarks use is installed: a program on PATH or a file.
_PROBES = {"nginx": "nginx", "fcgiwrap": "fcgiwrap", "cgit": "/usr/lib/cgit/cgit.cgi"}


def _installed(package: str) -> bool:
    probe = _PROBES[package]
    return Path(probe).is_file() if probe.startswith("/") else bool(shutil.which(probe, path=_SBIN))


def ensure_debian_packages(install: bool, packages: tuple[str, ...] = ("nginx", "fcgiwrap")) -> str | None:
    """None when the packages (nginx and fcgiwrap by default; also cgit) are there, installing
    them if allowed, else why not."""
    names = " ".join(packages)

    def present() -> bool:
        return all(_installed(p) for p in packages)

    if present():
        return None
    if not install:
        return f"{names}: not installed (and --no-install was given)"
    if os.geteuid() != 0:
        return f"{names}: not installed and this is not root: apt-get install -y {names}"
    if not shutil.which("apt-get"):
        return f"{names}: not installed and there is no apt-get"
    say(f"{names}: missing, running apt-get install -y {names} (as root)")
    env = {**base_env(), "DEBIAN_FRONTEND": "noninteractive"}
    argv = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, check=False)
        result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not present():
        return f"apt-get install {names} failed: {result.stderr.strip()[-500:]}"
    return None


NGINX_CONF = """\
{user}worker_processes 2;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port};
        # The usual git-http-backend setup (git-http-backend(1), nginx wiki), nginx's
        # default buffering; request headers (Git-Protocol) reach it as HTTP_*.
        location / {{
            fastcgi_pass unix:{sock};
            fastcgi_param SCRIPT_FILENAME {backend};
            fastcgi_param GIT_PROJECT_ROOT {root};
            fastcgi_param GIT_HTTP_EXPORT_ALL "";
            fastcgi_param GIT_CONFIG_NOSYSTEM 1;
            fastcgi_param HOME {home};
            fastcgi_param PATH_INFO $uri;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param CONTENT_TYPE $content_type;
            fastcgi_param CONTENT_LENGTH $content_length;
            fastcgi_param REQUEST_URI $request_uri;
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param REMOTE_ADDR $remote_addr;
            fastcgi_param SERVER_NAME $server_name;
            fastcgi_param SERVER_PORT $server_port;
        }}
    }}
}}
"""


def setup_nginx(tmp: Path, master: Path, procs: Processes, git: Git) -> tuple[Server, dict]:
    root = tmp / "http-root"
    root.mkdir()
    repo = root / "big.git"
    shutil.copytree(master, repo, symlinks=True)
    git.run("--git-dir", str(repo), "config", "http.receivepack", "true")
    ndir = tmp / "nginx"
    ndir.mkdir()
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (ndir / sub).mkdir()
    sock = ndir / "fcgiwrap.sock"
    backend = Path(git.run("--exec-path").strip()) / "git-http-backend"
    if not backend.exists():
        raise SetupError(f"{backend} does not exist")
    port = free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers must reach the root-owned socket
    conf = ndir / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            user=user, dir=ndir, port=port, sock=sock, backend=backend, root=root, home=tmp / "backend-home"
        )
    )
    (tmp / "backend-home").mkdir()
    fcgiwrap = shutil.which("fcgiwrap", path="/usr/sbin:/usr/bin:/sbin:/bin")
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin:/bin")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C"}
    fproc = procs.start("fcgiwrap", [fcgiwrap, "-c", "2", "-s", f"unix:{sock}"], env=env)
    deadline = time.monotonic() + 15
    while not sock.exists():
        if fproc.poll() is not None or time.monotonic() > deadline:
            raise SetupError(f"fcgiwrap did not create {sock}:\n{procs.log_tail('fcgiwrap')}")
        time.sleep(0.05)
    nproc = procs.start(
        "nginx", [nginx, "-p", str(ndir), "-c", str(conf), "-e", str(ndir / "error.log")], env=env
    )
    try:
        wait_for_port(port, nproc, "nginx")
    except SetupError as exc:
        tail = (
            (ndir / "error.log").read_text(errors="replace")[-2000:] if (ndir / "error.log").exists() else ""
        )
        raise SetupError(f"{exc}\n{procs.log_tail('nginx')}\n{tail}") from None
    version = subprocess.run([nginx, "-v"], capture_output=True, text=True, check=False).stderr.strip()
    return Server("nginx", "nginx+http-backend", f"http://127.0.0.1:{port}/big.git"), {
        "port": port,
        "version": version,
        "repo_dir": str(repo),
    }


def setup_daemon(tmp: Path, master: Path, procs: Processes, git: Git) -> tuple[Server, dict]:
    root = tmp / "daemon-root"
    root.mkdir()
    repo = root / "big.git"
    shutil.copytree(master, repo, symlinks=True)
    port = free_port()
    argv = [
        GIT, "daemon", "--reuseaddr", f"--base-path={root}", "--export-all", "--enable=receive-pack",
        f"--port={port}", "--listen=127.0.0.1", "--informative-errors", str(root),
    ]  # fmt: skip
    proc = procs.start("git-daemon", argv, env=git.env)
    wait_for_port(port, proc, "git daemon")
    return Server("daemon", "git daemon", f"git://127.0.0.1:{port}/big.git"), {
        "port": port,
        "repo_dir": str(repo),
    }
