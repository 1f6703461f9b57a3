"""The measuring half of bench.proposal_page, run in a child process with the bench's own
VAR_DIR and SQLite (`python -m bench.proposal_page_measure <json args>`): writes the proposal
and its threads, requests the page, prints one JSON line of samples.

Threads are written the way people write them: on revision 1, through the services (a first
comment, Markdown, a reply each; every tenth a suggestion), then the feature ref moves and
revision 2 is recorded, and the page shows revision 2: the threads are carried there."""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import resource
import sys
import time

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402 - after django.setup()
from django.core.cache import cache  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client, RequestFactory  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from gitcore import gitdiff  # noqa: E402
from gitcore.git import run_git  # noqa: E402
from repos import diffcache  # noqa: E402
from repos.models import Repository  # noqa: E402
from repos.views.diffs import diff_context  # noqa: E402
from reviews import selectors, services  # noqa: E402
from reviews.threads import services as threads  # noqa: E402
from reviews.threads.page import threads_context  # noqa: E402


def cpu_now() -> float:
    """This process's CPU and its reaped children's (git): what a request cost, however long
    the other processes of a shared machine made it wait."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def setup(a: dict):
    User = get_user_model()
    repo = Repository.objects.select_related("owner").get(owner__username="bench", name="big")
    alice, bob = User.objects.get(username="alice"), User.objects.get(username="bob")
    proposal = services.proposal_open(
        repo=repo, user=alice, source_ref=a["ref"], target_branch="main", title="Change every file"
    )
    first = selectors.latest_revision(proposal)
    for n in range(a["threads"]):
        body = f"Why **{n}**? See `compute_fast` in [the notes](docs/notes.md)."
        if n % 10 == 0:
            body += "\n\n```suggestion\n    # note 3: clamp the value\n```"
        thread = threads.thread_create(
            proposal=proposal,
            user=bob,
            revision=first,
            path=f"src/mod{n % a['files']:03d}.py",
            side="new",
            line_start=a["line"],
            line_end=a["line"] + 1,
            body=body,
        )
        threads.thread_reply(thread=thread, user=alice, body="Because the old one was slow.")
    run_git(["update-ref", a["ref"], a["second"]], repo=repo.disk_path)
    latest = services.revision_record(proposal=proposal, head=a["second"])
    assert latest is not None and latest.number == 2
    return repo, proposal, latest, bob


def main(a: dict) -> dict:
    repo, proposal, latest, reader = setup(a)
    url = f"/bench/big/proposals/{proposal.number}"
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(reader)
    request = RequestFactory().get(url, HTTP_HOST="127.0.0.1")
    request.user = reader
    samples: dict[str, list[float]] = {}

    def sample(kind: str, fn):
        t, c = time.perf_counter(), cpu_now()
        out = fn()
        samples.setdefault(kind, []).append((time.perf_counter() - t) * 1000)
        samples.setdefault("cpu_" + kind, []).append((cpu_now() - c) * 1000)
        return out

    def get():
        response = client.get(url)
        assert response.status_code == 200, response.status_code
        return response

    def threads_part(kind: str):
        # The threads' share: the same diff, parsed outside the timing (the page reads it from
        # the cache when warm), threads_context alone.
        diff = gitdiff.diff(repo.disk_path, latest.base_sha, latest.head_sha)
        return sample(kind, lambda: threads_context(request, repo, proposal, latest, latest, diff))

    get()  # imports, templates, the first connection: not part of any sample
    for _ in range(a["rounds"]):
        cache.clear()
        response = sample("cold", get)
        for _ in range(4):
            sample("warm", get)
        cache.clear()
        context = threads_part("threads_cold")
        for _ in range(4):
            threads_part("threads_warm")
    with CaptureQueriesContext(connection) as queries:
        get()
    body = response.content.decode()
    report = {
        "url": url,
        "bytes": len(response.content),
        "threads_shown": body.count('data-thread="'),
        "threads_outdated": len(context["threads_outdated"]),
        "queries_warm": len(queries.captured_queries),
    }
    # What the default view showed: the same diff as the page asks for it (from the cache).
    diff = diff_context(RequestFactory().get(url), repo.disk_path, latest.base_sha, latest.head_sha)["diff"]
    report["files"] = len(diff.files)
    report["shown_lines"] = sum(len(h.lines) for f in diff.files for h in f.hunks)
    report["changed"] = sum(f.additions + f.deletions for f in diff.files)
    report["truncated"] = bool(diff.truncated or any(f.truncated for f in diff.files))
    if a["profile"]:
        out = io.StringIO()
        for name in ("cold", "warm"):
            if name == "cold":
                cache.clear()
            prof = cProfile.Profile()
            prof.enable()
            get()
            prof.disable()
            out.write(f"--- {name}\n")
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(45)
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
        report["profile"] = out.getvalue()
    # The same page once the task has highlighted all of it (here: no budget, in the request).
    diffcache.PAGE_BUDGET_CHARS = None
    cache.clear()
    sample("full_cold", get)
    for _ in range(4 * a["rounds"]):
        sample("full_warm", get)
    return report | {"samples": samples}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
