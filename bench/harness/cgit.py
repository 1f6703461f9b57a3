"""cgit (Debian's package) behind nginx + fcgiwrap, serving a repository in place, and the
history the browse benchmark reads: the bench generator's files plus a large C file and a
README, as a kernel-like tree would have."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path

from bench.harness.common import Git, SetupError
from bench.harness.history import Buffered, HistoryGenerator, fast_import
from bench.harness.procs import Processes, free_port, wait_for_port

CGIT_CGI = Path("/usr/lib/cgit/cgit.cgi")
BIG_C = "kernel/sched/core.c"
README = "README.md"

_C_TYPES = ("int", "long", "unsigned int", "u64", "bool", "struct rq *", "struct task_struct *")
_C_NAMES = ("rq", "p", "cpu", "flags", "delta", "now", "se", "cfs_rq", "prev", "next", "ret", "i")


def c_source(rng: random.Random, lines: int) -> list[str]:
    """About `lines` lines of C shaped like a kernel source file: functions of a few dozen
    lines with declarations, conditions, loops, calls and comments."""
    out = ["// SPDX-License-Identifier: GPL-2.0-only\n", "/*\n", " *  kernel/sched/core.c\n", " */\n"]
    out += [f"#include <linux/{rng.choice(_C_NAMES)}{i}.h>\n" for i in range(30)]
    n = 0
    while len(out) < lines:
        n += 1
        name = f"{rng.choice(_C_NAMES)}_{rng.choice(('update', 'enqueue', 'balance', 'pick', 'clock'))}_{n}"
        out += ["\n", "/*\n", f" * {name}() - {rng.choice(('update', 'account', 'select'))} the runqueue.\n",
                " */\n", f"static {rng.choice(_C_TYPES)} {name}(struct rq *rq, int flags)\n", "{\n"]  # fmt: skip
        for var in rng.sample(_C_NAMES, 3):
            out.append(f"\t{rng.choice(_C_TYPES)} {var} = {rng.randint(0, 4096)};\n")
        for _ in range(rng.randint(4, 14)):
            a, b = rng.sample(_C_NAMES, 2)
            out.append(
                rng.choice(
                    (
                        f"\tif ({a} > {b} && !({a} & 0x{rng.randint(1, 255):x}))\n\t\t{a} = {b};\n",
                        f"\tfor (i = 0; i < {b}; i++)\n\t\t{a} += {b}->{rng.choice(_C_NAMES)}[i];\n",
                        f"\t{a} = {rng.choice(_C_NAMES)}_{rng.choice(('lock', 'load'))}({b}, flags);\n",
                        f'\tpr_debug("{name}: %d\\n", {a});\n',
                        f"\t/* {a} may race with {b}: hold rq->lock */\n",
                    )
                )
            )
        out += [f"\treturn {rng.choice(_C_NAMES)};\n", "}\n"]
    return out


def generate_browse_history(master: Path, git: Git, *, commits: int, seed: int, c_lines: int = 5000) -> None:
    """A bare repository at `master`: the generator's `src/pkgNN/moduleNNNN.py` files edited over
    `commits` commits (with its release tags), plus `kernel/sched/core.c` (~`c_lines` lines,
    edited like the rest) and a README.md, all written with one fast-import."""
    gen = HistoryGenerator(seed)
    gen.files[BIG_C] = c_source(random.Random(seed), c_lines)  # noqa: S311 - deterministic data
    gen.files[README] = ["# big\n", "\n", "A generated history for the browse benchmark.\n", "\n"] + [
        f"- item {i}: `{gen.pool[i].strip()[:40]}`\n" for i in range(40)
    ]
    git.run("init", "--bare", "--quiet", "--initial-branch=main", str(master))

    def writer(out):
        buffered = Buffered(out)
        gen.stream(buffered, commits, ref="refs/heads/main")
        buffered.flush()

    fast_import(master, git, writer)


CGITRC = """\
# The cgit defaults, one repository, no cache (as hostsite's pages are measured warm but
# uncached by a proxy), no filters (no syntax highlighting).
cache-size=0
enable-commit-graph=0
enable-log-filecount=0
enable-log-linecount=0
max-stats=
virtual-root=/
repo.url=big.git
repo.path={repo}
repo.desc=the benchmark repository
repo.defbranch=main
"""

NGINX_CGIT_CONF = """\
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
    server {{
        listen 127.0.0.1:{port};
        # cgit's documented nginx setup: every URL through cgit.cgi with PATH_INFO.
        location / {{
            fastcgi_pass unix:{sock};
            fastcgi_param SCRIPT_FILENAME {cgi};
            fastcgi_param CGIT_CONFIG {cgitrc};
            fastcgi_param HOME {home};
            fastcgi_param PATH_INFO $uri;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param REQUEST_URI $request_uri;
            fastcgi_param SCRIPT_NAME "";
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param REMOTE_ADDR $remote_addr;
            fastcgi_param SERVER_NAME $server_name;
            fastcgi_param SERVER_PORT $server_port;
            fastcgi_param HTTP_HOST $host;
        }}
    }}
}}
"""


def setup_cgit(tmp: Path, repo: Path, procs: Processes) -> tuple[str, str]:
    """cgit serving `repo` in place (the very directory hostsite serves) behind nginx +
    fcgiwrap; (base URL, nginx version)."""
    ndir = tmp / "cgit"
    ndir.mkdir()
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi", "home"):
        (ndir / sub).mkdir()
    cgitrc = ndir / "cgitrc"
    cgitrc.write_text(CGITRC.format(repo=repo))
    sock = ndir / "fcgiwrap.sock"
    port = free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers must reach the root-owned socket
    conf = ndir / "nginx.conf"
    conf.write_text(
        NGINX_CGIT_CONF.format(
            user=user, dir=ndir, port=port, sock=sock, cgi=CGIT_CGI, cgitrc=cgitrc, home=ndir / "home"
        )
    )
    fcgiwrap = shutil.which("fcgiwrap", path="/usr/sbin:/usr/bin:/sbin:/bin")
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin:/bin")
    if not fcgiwrap or not nginx or not CGIT_CGI.is_file():
        raise SetupError("cgit, nginx or fcgiwrap is missing")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C"}
    fproc = procs.start("cgit-fcgiwrap", [fcgiwrap, "-c", "2", "-s", f"unix:{sock}"], env=env)
    deadline = time.monotonic() + 15
    while not sock.exists():
        if fproc.poll() is not None or time.monotonic() > deadline:
            raise SetupError(f"fcgiwrap did not create {sock}:\n{procs.log_tail('cgit-fcgiwrap')}")
        time.sleep(0.05)
    nproc = procs.start(
        "cgit-nginx", [nginx, "-p", str(ndir), "-c", str(conf), "-e", str(ndir / "error.log")], env=env
    )
    wait_for_port(port, nproc, "nginx (cgit)")
    return f"http://127.0.0.1:{port}/big.git", str(nginx)
