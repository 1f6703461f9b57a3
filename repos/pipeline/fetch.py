"""The steps of a fetch (upload-pack): count the origin's bytes, answer ls-refs from the cache,
and screen what the request names against what the viewer may not see."""

from __future__ import annotations

from gitcore import advertisement, hiderefs
from gitcore.git import run_git
from repos import fetchscreen, transfers
from repos.pipeline.call import Run


def count_transfer(run: Run) -> None:
    """The origin's share of clone and fetch traffic, for the offload figure: whatever answers,
    git or a cache."""
    repository_id = run.call.repo.pk
    run.on_exit.append(lambda _returncode, sent: transfers.add(repository_id, git_bytes=sent, git_requests=1))


def cached_ls_refs(run: Run) -> None:
    """v2 ls-refs about HEAD, branches and tags, from the cache keyed by the ref files."""
    fetch = run.prepared.fetch if run.prepared else None
    if fetch is None or not (fetch.v2 and fetch.command == "ls-refs") or run.body is None:
        return
    head = run.body.read(advertisement.LS_REFS_MAX_BODY + 1)
    run.body.seek(0)
    run.answer = advertisement.ls_refs(run.path, run.argv(), run.env, head)


def screen(run: Run) -> None:
    """The ids and names the request gives, screened (repos.fetchscreen): a refusal is the
    answer; hidden ids reach git as ids it does not have."""
    fetch = run.prepared.fetch if run.prepared else None
    if fetch is None or run.body is None:
        return
    screened = fetchscreen.screen(
        run.req, fetch, path=run.path, hide_values=hiderefs.values_for("upload-pack", run.config)
    )
    if screened.answer is not None:
        run.answer = screened.answer
        return
    if screened.body is None:
        return
    run.body.close()
    run.body = screened.body
    if not screened.hidden_info:
        return
    # object-info with hidden ids: a few lines, answered whole once git has told the rest.
    with screened.body:
        ran = run_git(run.argv(), env=run.env, input=screened.body.read(), check=False)
    run.answer = (
        fetchscreen.object_info_answer(fetch, ran.stdout, screened.hidden_info)
        if ran.returncode == 0
        else ran.stdout
    )
