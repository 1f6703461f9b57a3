"""`make run`: migrate, seed the demo, then run the web server, one Celery worker and beat, and
restart any of them that dies (with backoff) while the others carry on.

Every child runs in its own process group (hostsite.processes), so one Ctrl-C reaches only
this supervisor, which then stops each group in order (a second, racing SIGINT would make
Celery skip its warm shutdown). Children also get PR_SET_PDEATHSIG, so even if this process is
SIGKILLed none of them outlives it. Nothing here imports Django: settings errors surface in the
children with the message that names the variable.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

from hostsite.processes import StartupError, Supervisor, celery_argv, wait_for_http, web_argv

BASE_DIR = Path(__file__).resolve().parent.parent
PY = sys.executable
STOP_TIMEOUT = 25.0


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    var_dir = Path(env.get("VAR_DIR") or BASE_DIR / "var").resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    env["VAR_DIR"] = str(var_dir)
    if not env.get("SECRET_KEY") and env.get("DEBUG", "").lower() not in {"1", "true", "yes", "on"}:
        # Embedded default: a random key made once and kept in var/, never in the code.
        key_file = var_dir / "secret_key"
        if not key_file.exists():
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(50))
        env["SECRET_KEY"] = key_file.read_text().strip()
    env.setdefault("PYTHONUNBUFFERED", "1")
    # Notification mail is printed by the worker unless a real server is named (EMAIL_URL).
    env.setdefault("EMAIL_URL", "console://")
    return env


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([PY, str(BASE_DIR / "manage.py"), *args], env=env, cwd=BASE_DIR, check=True)


def main() -> int:
    env = _environment()
    var_dir = Path(env["VAR_DIR"])
    print(f"hostsite: data in {var_dir}", flush=True)
    try:
        _manage(env, "migrate", "--noinput", "-v", "0")
        _manage(env, "collectstatic", "--noinput", "-v", "0")
        _manage(env, "seed_demo")
        _manage(env, "replay_pushes")  # pushes spooled while the last run was down or dying
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130

    sup = Supervisor(env=env, cwd=BASE_DIR, say=lambda text: print(f"hostsite: {text}", flush=True))

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        sup.start("web", web_argv(PY, BASE_DIR))
        concurrency = env.get("CELERY_CONCURRENCY", "2")
        sup.start(
            "worker",
            celery_argv(PY, "worker", "--concurrency", concurrency, "--hostname", f"worker-{os.getpid()}@%h"),
        )
        schedule = str(var_dir / "celerybeat-schedule")
        sup.start("beat", celery_argv(PY, "beat", "--schedule", schedule, "--pidfile", ""))
        host = env.get("HOST", "127.0.0.1")
        port = env.get("PORT", "8000")
        url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
        try:
            wait_for_http(url, watch=sup.children)
        except StartupError as exc:
            print(f"hostsite: the web server did not start ({exc}); see the log above", flush=True)
            return 1
        print(f"\nhostsite is running at {url}  (Ctrl-C stops it)\n", flush=True)
        sup.run_forever()
        return 0
    except KeyboardInterrupt:
        print("\nhostsite: stopping...", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sup.stop(STOP_TIMEOUT)
        print("hostsite: stopped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
