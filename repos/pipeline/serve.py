"""The pipeline's driver: the steps each kind of request takes, in order, then git run and
streamed. Every transport calls `advertise` and `rpc` here; no step knows which one called.

    authorize   the transport's (repos.gitaccess.authorize; the replication token)
    request     Run.request: the body read and checked (repos.requestbody)
    config      access_config: the access backends' `git -c` pairs (repos.gitaccess)
    steps       per service and route, below: each adds configuration, an answer, or work for
                when git exits
    run         git started with the configuration, fed the body (gitcore.gitstream)
    stream      git's output to the client, with what the steps wait to say before its end
    record      the steps' work once git exits: the push's record, the transfer count
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from typing import BinaryIO

from django.http import HttpResponse

from gitcore import advertisement, pktline
from gitcore.git import popen_git
from gitcore.gitstream import NO_CACHE_HEADERS, Feeder, GitProcessResponse
from repos import gitaccess
from repos.gitprotocol import wants_v2
from repos.pipeline import fetch, push
from repos.pipeline.call import REPLICA, GitCall, Run, with_limits

Step = Callable[[Run], None]


def access_config(run: Run) -> None:
    """What the access backends configure for this viewer: hidden refs, bundle lists; for a
    push, per ref it updates."""
    refs = [ref for _old, _new, ref in run.req.commands] if run.req.service == "receive-pack" else None
    run.config = gitaccess.git_config(run.req, advertise=run.prepared is None, refs=refs)


def written_advertisement(run: Run) -> None:
    """An advertisement the application writes itself: a pusher shown a few namespaces is
    listed by prefix without reading every ref (aliases apply here only: where git writes the
    advertisement there are none, and proc-receive copes); v2 lists no refs, only the same
    capabilities for every request with this configuration."""
    service, protocol = run.call.service, run.call.protocol
    if service == "receive-pack" and (shown := advertisement.shown_prefixes(run.config)) is not None:
        aliases = gitaccess.push_aliases(run.req)
        run.answer = advertisement.write(
            run.path, shown, with_limits(service, run.config), protocol, aliases=aliases
        )
    elif service == "upload-pack" and protocol is not None and wants_v2(protocol):
        run.answer = advertisement.upload_pack_v2(run.path, run.config, protocol)


# A replica fetches everything as it is (replication.internal): nothing hidden, nothing
# screened, nothing counted as the public's traffic.
ADVERTISEMENT_STEPS: dict[bool, tuple[Step, ...]] = {
    False: (access_config, written_advertisement),
    True: (),
}
REQUEST_STEPS: dict[tuple[str, bool], tuple[Step, ...]] = {
    ("upload-pack", False): (access_config, fetch.count_transfer, fetch.cached_ls_refs, fetch.screen),
    ("receive-pack", False): (access_config, push.record, push.acknowledgements, push.object_checks),
    ("upload-pack", True): (),
}


def _take(run: Run, steps: tuple[Step, ...]) -> None:
    for step in steps:
        step(run)
        if run.answer is not None:
            return


def advertise(call: GitCall, *, service_line: bool = True) -> GitProcessResponse | HttpResponse:
    """The advertisement. `service_line`: smart HTTP's `# service=` first line (git over SSH
    has none)."""
    run = Run.advertisement(call)
    _take(run, ADVERTISEMENT_STEPS[call.transport == REPLICA])
    # v0/v1 advertisements start with the service line, as git http-backend writes it; in v2
    # the capability advertisement stands alone.
    prefix = b""
    if service_line and (not wants_v2(call.protocol) or call.service == "receive-pack"):
        prefix = pktline.encode(f"# service=git-{call.service}\n") + pktline.FLUSH
    content_type = f"application/x-git-{call.service}-advertisement"
    if run.answer is not None:
        return HttpResponse(prefix + run.answer, content_type=content_type, headers=NO_CACHE_HEADERS)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response
    proc = popen_git(
        run.argv(),
        env=run.env,
        stdin=subprocess.DEVNULL,
        stderr=stderr,
    )
    return GitProcessResponse(proc, content_type=content_type, prefix=prefix, stderr_file=stderr)


def rpc(call: GitCall, *, body: BinaryIO, gzip: bool) -> GitProcessResponse | HttpResponse:
    """One request's git run, streamed both ways: nothing holds a pack in memory."""
    run = Run.request(call, body, gzip=gzip)
    try:
        _take(run, REQUEST_STEPS[call.service, call.transport == REPLICA])
    except BaseException:
        if run.body is not None:
            run.body.close()
        raise
    content_type = f"application/x-git-{call.service}-result"
    if run.answer is not None:
        if run.body is not None:
            run.body.close()
        run.exited(0, len(run.answer))
        return HttpResponse(run.answer, content_type=content_type, headers=NO_CACHE_HEADERS)
    assert run.prepared is not None and run.body is not None
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response
    proc = popen_git(run.argv(), env=run.env, stderr=stderr)
    feeder = Feeder(proc, run.prepared.prefix, run.body)
    feeder.start()
    return GitProcessResponse(
        proc,
        content_type=content_type,
        feeder=feeder,
        on_exit=run.exited if run.on_exit else None,
        stderr_file=stderr,
        finish_when_abandoned=call.service == "receive-pack",
        relay=run.relay,
        before_end=run.ending if run.before_end else None,
    )
