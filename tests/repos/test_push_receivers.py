"""A crashing push_recorded receiver breaks neither the push nor the other receivers: a real
`git push` to a web server that has one connected (before every other app's) succeeds, the
push is recorded, the crash is logged once, and the tasks the other receivers enqueue run on
a real worker (a proposal opened by push options, the pusher's Workspace row, a bundle
build queued)."""

from __future__ import annotations

import re

import pytest

from repos.models import Push
from reviews.models import Proposal
from tests import live
from tests.crashing_app.apps import CRASH
from tests.pushers import World
from tests.support.wait import wait_until
from workspaces.models import Workspace

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
QUEUED_BUILD = re.compile(r"Task bundles\.tasks\.follow_push\[[^\]]+\] succeeded in [^:]+: 'queued'")


@pytest.fixture(scope="module")
def crashing_web(live_env, tmp_path_factory):
    env = {**live_env, "DJANGO_SETTINGS_MODULE": "tests.settings_crashing"}
    port = live.free_port()
    web = live.start_web(env, port, tmp_path_factory.mktemp("crashing-web"))
    web.url = f"http://127.0.0.1:{port}"
    yield web
    web.stop()


def crashes(web) -> tuple[int, int]:
    """Log lines naming the failed receiver, and tracebacks of its exception."""
    log = web.log_path.read_text(errors="replace")
    return log.count("Error calling crash in Signal.send_robust()"), log.count(f"RuntimeError: {CRASH}")


def test_a_crashing_receiver_breaks_neither_the_push_nor_the_others(
    crashing_web, celery_worker_process, tmp_path, git_home
):
    world = World(crashing_web.url, tmp_path, git_home)  # its seeding push crashed the receiver too
    alice = world.add("alice")
    head = alice.commit("alice's change", name="alice.txt")
    result = alice.push("HEAD:refs/for/main", options=["title=Still proposed"])
    assert result.returncode == 0, result.stderr
    assert "delayed" not in result.stderr  # recorded at once, not left for the replay

    pushes = Push.objects.filter(repository=world.repo).order_by("pk")
    wait_until(lambda: pushes.count() == 2, timeout=60, what="both pushes recorded")
    assert pushes.last().pusher_name == "alice"
    wait_until(lambda: crashes(crashing_web) >= (2, 2), timeout=60, what="the crashes logged")
    assert crashes(crashing_web) == (2, 2), crashing_web.log()  # once per push, with its traceback

    proposal = wait_until(
        lambda: Proposal.objects.filter(repository=world.repo).first(), timeout=60, what="the proposal opened"
    )
    assert proposal is not None and proposal.title == "Still proposed"
    assert proposal.revisions.get().head_sha == head
    wait_until(
        lambda: Workspace.objects.filter(repository=world.repo, user=alice.user).exists(),
        timeout=60,
        what="alice's Workspace row",
    )
    # The seeding push moved main: the bundles receiver's task queued a (debounced) build.
    wait_until(
        lambda: QUEUED_BUILD.search(celery_worker_process.log(limit=None)),
        timeout=60,
        what="the bundle build queued",
    )
