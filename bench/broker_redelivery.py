"""Does a task whose worker dies mid-task run again? kombu's filesystem transport and
hostsite.fsbroker side by side, with real Celery workers (prefork, late acks) killed by SIGKILL.

Two deaths per transport, each with a fresh queue:
- `pool`: the pool process running the task is killed; the worker's main process lives and
  requeues the message (task_reject_on_worker_lost), after billiard's 10 s wait for a lost
  pool process's job (LOST_WORKER_TIMEOUT), on either transport.
- `worker`: the whole worker (main process and pool) is killed, as by the OOM killer or a
  host's reboot; a second worker is then started on the same folder.

    .venv/bin/python -m bench.broker_redelivery [--wait 30]

Prints, per transport and death, whether the task ran again and how long after the kill.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from bench.harness.common import BASE_DIR, PY, base_env, say

TRANSPORTS = {"kombu": "filesystem", "hostsite": "hostsite.fsbroker:Transport"}


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


class Run:
    def __init__(self, transport: str, root: Path) -> None:
        self.dir = root
        for folder in ("queue", "control", "processing"):
            (root / folder).mkdir(parents=True)
        self.env = {**base_env(), "BENCH_DIR": str(root), "BENCH_TRANSPORT": transport}
        self.workers: list[subprocess.Popen] = []

    def start_worker(self) -> subprocess.Popen:
        n = len(self.workers)
        log = open(self.dir / f"worker{n}.log", "wb")  # noqa: SIM115  (closed with the run)
        argv = [PY, "-m", "celery", "-A", "bench.broker_app", "worker", "--pool", "prefork"]
        argv += ["--concurrency", "1", "--without-mingle", "--without-gossip", "--loglevel", "INFO"]
        argv += ["--hostname", f"bench{n}-{uuid.uuid4().hex[:6]}@%h"]
        worker = subprocess.Popen(
            argv, cwd=BASE_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.workers.append(worker)
        logfile = self.dir / f"worker{n}.log"
        if not _wait(lambda: b"ready." in logfile.read_bytes(), 90):
            raise RuntimeError(f"worker did not start:\n{logfile.read_text()}")
        return worker

    def send(self, name: str) -> None:
        code = f"from bench.broker_app import work; work.delay({name!r})"
        subprocess.run([PY, "-c", code], cwd=BASE_DIR, env=self.env, check=True)

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def measure(transport: str, death: str, root: Path, wait: float) -> float | None:
    """Seconds from the kill to the rerun's end, or None if the task never ran again."""
    run = Run(TRANSPORTS[transport], root)
    try:
        worker = run.start_worker()
        run.send("task")
        paused = root / "task.paused"
        if not _wait(lambda: paused.exists() and paused.read_text(), 60):
            raise RuntimeError("the task never started")
        killed = time.monotonic()
        if death == "pool":
            os.kill(int(paused.read_text()), signal.SIGKILL)
        else:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
            killed = time.monotonic()
            run.start_worker()
        if _wait(lambda: (root / "task.done").exists(), wait):
            return time.monotonic() - killed
        return None
    finally:
        run.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=30.0, help="seconds to wait for a rerun")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="broker-bench-") as tmp:
        for death in ("pool", "worker"):
            for transport in TRANSPORTS:
                say(f"{transport}: kill the {death} mid-task")
                seconds = measure(transport, death, Path(tmp) / f"{transport}-{death}", args.wait)
                rows.append((transport, death, seconds))
    print(f"{'transport':10} {'killed':8} result")
    for transport, death, seconds in rows:
        result = (
            f"ran again {seconds:.1f} s after the kill"
            if seconds is not None
            else f"LOST (no rerun in {args.wait:.0f} s)"
        )
        print(f"{transport:10} {death:8} {result}")


if __name__ == "__main__":
    main()
