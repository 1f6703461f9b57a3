"""What every benchmark shares: paths, the progress line, its two errors, client-side git with a
pinned HOME and config, and `manage.py` with a private VAR_DIR."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent.parent
_VENV_PY = BASE_DIR / ".venv" / "bin" / "python"
PY = str(_VENV_PY) if _VENV_PY.exists() else sys.executable
GIT = shutil.which("git") or "git"
ZERO_OID = "0" * 40
MIB = 1024 * 1024


# Environment variables that would point hostsite at shared infrastructure, or route loopback
# traffic through a proxy. None of them reaches a child process.
_STRIP_ENV = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "BUNDLE_STORAGE_URL",
    "S3_ENDPOINT_URL",
    "REPO_ROOT",
    "CELERY_QUEUE",
    "DEBUG",
    "DJANGO_SETTINGS_MODULE",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
)

_T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {message}", file=sys.stderr, flush=True)


class SetupError(Exception):
    """The benchmark cannot run (exit 1)."""


class MeasureError(Exception):
    """One measurement failed; it is recorded and the run goes on."""


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _STRIP_ENV}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def client_env(home: Path) -> dict[str, str]:
    """Client-side git: a pinned HOME and config, no system config, no prompts, no proxies."""
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    if not gitconfig.exists():
        # No background maintenance after fetches, so only the transfer is measured.
        gitconfig.write_text(
            "[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n[fetch]\n\twriteCommitGraph = false\n"
            "[advice]\n\tdetachedHead = false\n"
        )
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "GIT_AUTHOR_DATE": "1700000000 +0000",
        "GIT_COMMITTER_DATE": "1700000000 +0000",
    }


class Git:
    def __init__(self, env: dict[str, str], secrets: list[str]):
        self.env = env
        self.secrets = secrets

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "***")
        return text

    def run(self, *args: str, input: bytes | None = None, timeout: float = 3600) -> str:
        argv = [GIT, *args]
        proc = subprocess.run(
            argv,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip()[-1500:]
            raise MeasureError(self.redact(f"git {' '.join(args)} exited {proc.returncode}: {err}"))
        return proc.stdout.decode(errors="replace")

    def timed(self, *args: str, timeout: float = 3600) -> float:
        """Seconds git took, wall clock; MeasureError if it failed."""
        t0 = time.perf_counter()
        self.run(*args, timeout=timeout)
        return time.perf_counter() - t0


def manage(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [PY, str(BASE_DIR / "manage.py"), *args],
        env=env,
        cwd=BASE_DIR,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise SetupError(
            f"manage.py {args[0]} {args[1] if len(args) > 1 else ''} failed:\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


def user_token(env: dict[str, str], git: Git, user: str) -> str:
    """A new user with a write token; the token is redacted from git's errors."""
    manage(env, "user", "create", user)
    token = manage(env, "token", "create", user, "--scope", "write").strip()
    if not token:
        raise SetupError("manage.py token create printed no token")
    git.secrets.append(token)
    return token


def repo_create(env: dict[str, str], name: str, *args: str) -> Path:
    """`manage.py repo create <name> <args>`; the repository's directory on disk."""
    out = manage(env, "repo", "create", name, *args)
    # `repo create` prints "created <owner>/<name> (<visibility>) at <path>" last.
    path = Path(out.strip().splitlines()[-1].rsplit(" at ", 1)[-1])
    if not (path / "HEAD").is_file():
        raise SetupError(f"cannot find hostsite's repository directory in {out!r}")
    return path


def hostsite_env(var_dir: Path, port: int) -> dict[str, str]:
    env = base_env()
    env.update(
        {
            "VAR_DIR": str(var_dir),
            "SECRET_KEY": "bench-only",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "ACCESS_LOG": "0",
            "WEB_CONCURRENCY": "2",
            "DJANGO_SETTINGS_MODULE": "hostsite.settings",
        }
    )
    return env


def hostsite_revision(git: Git) -> str:
    try:
        rev = git.run("-C", str(BASE_DIR), "rev-parse", "--short", "HEAD").strip()
        dirty = git.run("-C", str(BASE_DIR), "status", "--porcelain", "--untracked-files=no").strip()
        return rev + ("+dirty" if dirty else "")
    except MeasureError:
        return "unknown"
