"""A task goes through the real broker (filesystem or Redis, whichever the settings choose) to a
real worker process, not eager mode, and does real work on a real repository."""

import pytest

from repos import services
from repos.models import Repository
from repos.tasks import maintain_repository, schedule_maintenance
from sources import importing
from tests import live
from tests.factories import UserFactory
from tests.gitutil import make_history
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def test_eager_mode_is_off():
    from hostsite.celery import app

    assert app.conf.task_always_eager is False


def test_worker_runs_maintenance_through_the_broker(celery_worker_process, tmp_path, git_home):
    src = tmp_path / "src"
    make_history(src, git_home)
    repo = importing.import_now(owner=UserFactory(), name="maint", source=str(src)).repository
    pack_dir = repo.disk_path / "objects" / "pack"
    assert not list(pack_dir.glob("*.bitmap"))

    result = maintain_repository.delay(repo.pk)
    assert result.id  # published to the broker; the worker, not this process, runs it

    wait_until(
        lambda: Repository.objects.get(pk=repo.pk).last_maintained_at is not None,
        timeout=60,
        what=lambda: f"the repository maintained; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )
    assert list(pack_dir.glob("*.bitmap"))
    info = repo.disk_path / "objects" / "info"
    assert (info / "commit-graph").exists() or (info / "commit-graphs").exists()
    assert f"Task repos.tasks.maintain_repository[{result.id}]" in celery_worker_process.log()


def test_periodic_scheduler_task_fans_out(celery_worker_process):
    repo = services.repository_create(owner=UserFactory(), name="due")
    schedule_maintenance.delay()
    wait_until(
        lambda: Repository.objects.get(pk=repo.pk).last_maintained_at is not None,
        timeout=60,
        what=lambda: f"the repository maintained; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )


def test_maintenance_follows_enough_pushes(celery_worker_process, live_server_url, tmp_path, git_home):
    """Pushes go through the web server; the third (MAINTENANCE_PUSH_THRESHOLD in the live
    environment) enqueues maintenance on commit, and the worker runs it."""
    from repos.models import Push
    from tests.gitutil import git

    owner = UserFactory(username="pusher")
    token = services.token_create(user=owner, scope="write")[1]
    repo = services.repository_create(owner=owner, name="busy")
    Repository.objects.filter(pk=repo.pk).update(last_maintained_at=None)
    work = tmp_path / "w"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    remote = f"http://pusher:{token}@{live_server_url.removeprefix('http://')}/pusher/busy.git"
    for i in range(3):
        git(git_home, "commit", "--quiet", "--allow-empty", "-m", f"push {i}", cwd=work)
        git(git_home, "push", "--quiet", remote, "main", cwd=work)
        if i < 2:
            assert Repository.objects.get(pk=repo.pk).last_maintained_at is None
    assert Push.objects.filter(repository=repo).count() == 3
    wait_until(
        lambda: Repository.objects.get(pk=repo.pk).last_maintained_at is not None,
        timeout=60,
        what=lambda: f"the repository maintained; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )
    assert Repository.objects.get(pk=repo.pk).pushes_since_maintenance == 0


@pytest.fixture
def fresh_worker(live_env, _isolated_storage, tmp_path):
    """A worker started by this test, not the module's lent one: the test tells the worker's
    sessions from others by their starting after the test did."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip(
            "sessions are PostgreSQL's: the suite runs on SQLite (DATABASE_URL=postgres://... tests it)"
        )
    live.empty_queues(_isolated_storage["queue"])
    (tmp_path / "logs").mkdir()
    worker = live.start_worker(live_env, tmp_path / "logs", queue=_isolated_storage["queue"])
    yield worker
    worker.stop()


def test_a_worker_keeps_its_database_sessions_between_tasks(fresh_worker):
    """Celery's Django fixup closes every connection around every task, a new PostgreSQL
    session (a server process) each time; the site keeps them as for requests (CONN_MAX_AGE)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        (started,) = cursor.fetchone()

    def run_tasks(total: int) -> set[int]:
        """After `total` runs in all: the worker's sessions (opened since the test started)."""
        schedule_maintenance.delay()
        wait_until(
            lambda: fresh_worker.log().count("Task repos.tasks.schedule_maintenance[") >= 2 * total,
            timeout=30,
            what=lambda: f"{total} runs; worker log:\n{fresh_worker.log()}",
            alive=fresh_worker,
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_start > %s",
                [started],
            )
            return {pid for (pid,) in cursor.fetchall()}

    warm: set[int] = set()
    for n in range(1, 5):  # both pool processes have run a task, most likely
        warm |= run_tasks(n)
    later: set[int] = set()
    for n in range(5, 11):
        later |= run_tasks(n)
    assert warm, "no session of the worker outlived its task"
    assert len(later - warm) <= 1, (warm, later)
