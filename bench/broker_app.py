"""The Celery app bench.broker_redelivery runs: one task, late acks, on the filesystem transport
named by BENCH_TRANSPORT (kombu's own or hostsite.fsbroker) with its folders under BENCH_DIR.
No Django: both transports are plain kombu, and a worker starts in a second instead of ten."""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery import Celery

DIR = Path(os.environ["BENCH_DIR"])

# No fixups: Celery's Django fixup would set up hostsite's settings in each pool process.
app = Celery("broker_bench", set_as_current=True, fixups=[])
app.conf.update(
    broker_url="filesystem://",
    broker_transport=os.environ["BENCH_TRANSPORT"],
    broker_transport_options={
        "data_folder_in": str(DIR / "queue"),
        "data_folder_out": str(DIR / "queue"),
        "control_folder": str(DIR / "control"),
        "processing_folder": str(DIR / "processing"),
        "polling_interval": 0.1,
        "recover_interval": 1,
    },
    # What hostsite's settings ask of every broker.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
)


@app.task(name="bench.work")
def work(name: str) -> None:
    """The first run pauses (its pid in <name>.paused) so the runner can kill it mid-task;
    every run that gets past the pause writes <name>.done."""
    try:
        fd = os.open(DIR / f"{name}.paused", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        (DIR / f"{name}.done").write_text(str(os.getpid()))
        return
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    time.sleep(600)
