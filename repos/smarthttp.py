"""Git smart HTTP: run upload-pack / receive-pack with --stateless-rpc and stream both ways.

Nothing holds a pack in memory: a request body is copied into git's stdin by a feeder thread
in 64 KiB chunks while the response iterates git's stdout. Bodies are checked before git
starts (repos.requestbody). What the request may see and do beyond the role comes from the git
access backends (repos.gitaccess). When the client goes away, gunicorn closes the response and
gitcore.gitstream kills and reaps git.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.http import HttpResponse

from gitcore import advertisement, hiderefs, oids, pktline
from gitcore.fetchrequest import FetchRequest
from gitcore.git import popen_git, run_git
from gitcore.gitstream import NO_CACHE_HEADERS, Feeder, GitProcessResponse
from repos import fetchscreen, gitaccess, objectcheck, push_spool, pushes, sideband, signals, transfers
from repos.gitaccess import GitClient, GitRequest
from repos.gitprotocol import Pusher, repository_dir, wants_v2
from repos.models import Push, Repository, RepositoryChange
from repos.objectcheck_services import record_legacy
from repos.requestbody import prepare_body

log = logging.getLogger(__name__)


def git_request(
    repo: Repository,
    service: str,
    pusher: Pusher,
    client: GitClient | None,
    commands=(),
    capabilities: frozenset[str] = frozenset(),
) -> GitRequest:
    """The request as the git access backends (repos.gitaccess) see it."""
    return GitRequest(
        repository=repo,
        user=pusher.user,
        role=pusher.role_label,
        service=service,
        client=client,
        commands=tuple(tuple(c) for c in commands),
        capabilities=capabilities,
    )


def _with_limits(service: str, config: list[tuple[str, str]]) -> list[tuple[str, str]]:
    if service == "receive-pack":
        return [("receive.maxInputSize", str(settings.GIT_MAX_PUSH_SIZE)), *config]
    return config


def _service_argv(service: str, path: Path, *, advertise: bool, config: list[tuple[str, str]]) -> list[str]:
    argv = []
    for key, value in _with_limits(service, config):
        argv += ["-c", f"{key}={value}"]
    argv += [service, "--stateless-rpc"]
    if advertise:
        argv.append("--advertise-refs")
    argv.append(str(path))
    return argv


def _hook_env(
    req: GitRequest, pusher: Pusher, updates_file: str, spool_id: str, transport: str
) -> dict[str, str]:
    repo, role = req.repository, req.role
    return {
        **gitaccess.push_env(req),
        "HOSTSITE_PUSHER": pusher.user.username,
        "HOSTSITE_PUSHER_ID": str(pusher.user.pk),
        "HOSTSITE_ROLE": role,
        "HOSTSITE_REPO_ID": str(repo.pk),
        "HOSTSITE_REF_UPDATES_FILE": updates_file,
        # post-receive spools the push here (repos.push_spool); this process records it, and
        # the replay leaves a young file alone while this process lives.
        "HOSTSITE_PUSH_SPOOL_DIR": str(push_spool.spool_dir()),
        "HOSTSITE_PUSH_ID": spool_id,
        "HOSTSITE_PUSH_PROTOCOL": transport,
        "HOSTSITE_SPOOL_WRITER_PID": str(os.getpid()),
    }


def advertise(
    repo: Repository,
    service: str,
    pusher: Pusher,
    protocol: str | None,
    client: GitClient,
    *,
    service_line: bool = True,
) -> GitProcessResponse | HttpResponse:
    """The advertisement. `service_line`: smart HTTP's `# service=` first line (git over SSH
    has none)."""
    path = repository_dir(repo)
    env = {"GIT_PROTOCOL": protocol} if protocol else {}
    req = git_request(repo, service, pusher, client)
    config = gitaccess.git_config(req, advertise=True, refs=None)
    # v0/v1 advertisements start with the service line, as git http-backend writes it; in v2
    # the capability advertisement stands alone.
    prefix = b""
    if service_line and (not wants_v2(protocol) or service == "receive-pack"):
        prefix = pktline.encode(f"# service=git-{service}\n") + pktline.FLUSH
    content_type = f"application/x-git-{service}-advertisement"
    body = None
    if service == "receive-pack" and (shown := advertisement.shown_prefixes(config)) is not None:
        # A pusher shown a few namespaces: listed by prefix, without reading every ref.
        # Aliases apply here only: where git writes the advertisement itself (below, and the
        # alternates case of advertisement.write) there are none, and proc-receive copes.
        aliases = gitaccess.push_aliases(req)
        body = advertisement.write(path, shown, _with_limits(service, config), protocol, aliases=aliases)
    elif service == "upload-pack" and protocol is not None and wants_v2(protocol):
        # v2 lists no refs here: the same capabilities for every request with this config.
        body = advertisement.upload_pack_v2(path, config, protocol)
    if body is not None:
        return HttpResponse(prefix + body, content_type=content_type, headers=NO_CACHE_HEADERS)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response
    proc = popen_git(
        _service_argv(service, path, advertise=True, config=config),
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=stderr,
    )
    return GitProcessResponse(proc, content_type=content_type, prefix=prefix, stderr_file=stderr)


def rpc(
    repo: Repository,
    service: str,
    pusher: Pusher,
    *,
    body: BinaryIO,
    gzip: bool,
    protocol: str | None,
    client: GitClient,
    transport: str = "http",
) -> GitProcessResponse | HttpResponse:
    """One request's git run. `transport`: how the client reached us ("http", "ssh"), as the
    push's record says."""
    path = repository_dir(repo)
    # Push is always protocol v0 (git has no v2 push); GIT_PROTOCOL only matters for fetch.
    protocol = protocol if service == "upload-pack" else None
    prepared = prepare_body(service, body, gzip=gzip, protocol=protocol, fmt=oids.object_format(path))
    commands = prepared.commands
    capabilities = pktline.receive_capabilities(prepared.prefix) if service == "receive-pack" else frozenset()
    req = git_request(repo, service, pusher, client, commands, capabilities)
    env = {"GIT_PROTOCOL": protocol} if protocol else {}
    on_exit = relay = before_end = None
    if service == "receive-pack":
        fd, updates_path = tempfile.mkstemp(prefix="hostsite-push-", suffix=".refs")
        os.close(fd)
        spool_id = push_spool.new_spool_id()
        env.update(_hook_env(req, pusher, updates_path, spool_id, transport))
        # The object checks' messages reach the client on side-band 2: read them on the way
        # (legacy objects are recorded, refusals explained). Without a side-band they go to
        # git's stderr and the client sees none of them; nothing to add to.
        if sideband.negotiated(capabilities):
            relay = sideband.FsckRelay()

        def record_updates_file(text: str):
            # post-receive could not spool (a full disk): record what it wrote here instead.
            updates = pushes.parse_updates(text)
            return (
                pushes.push_record(
                    repo=repo,
                    pusher=pusher.user,
                    updates=updates,
                    protocol=transport,
                    push_options=pushes.parse_push_options(text),
                )
                if updates
                else None
            )

        recording = push_spool.LiveRecording(
            repository_id=repo.pk,
            spool_id=spool_id,
            updates_file=updates_path,
            record_fallback=record_updates_file,
        )

        def before_end() -> bytes:
            # Whatever post-receive spooled did happen: record it while the client still
            # listens, so it can be told if the record has to wait for the replay.
            if not recording.attempt():
                return f"{push_spool.DELAYED_MESSAGE}\n".encode()
            return _acknowledging(repo, recording.push)

        def on_exit(returncode: int, sent: int) -> None:
            # Also when the client left before the end: the push happened all the same. A
            # push git rejected spooled nothing and records nothing.
            recording.attempt()
            if recording.push is not None and relay is not None and relay.messages:
                _record_legacy(repo, relay.messages)

    refs = [ref for _old, _new, ref in commands] if service == "receive-pack" else None
    config = gitaccess.git_config(req, advertise=False, refs=refs)
    if service == "receive-pack":
        # Every fsck message id at the severity the object checks give it (repos.objectcheck).
        config = [*objectcheck.git_config("receive", objectcheck.repository_overrides(repo)), *config]
    if service == "upload-pack":

        def on_exit(returncode: int, sent: int) -> None:
            # The origin's share of clone and fetch traffic, for the offload figure.
            transfers.add(repo.pk, git_bytes=sent, git_requests=1)

    argv = _service_argv(service, path, advertise=False, config=config)
    rest = prepared.rest
    if prepared.fetch is not None:
        answer = _fetch_answer(req, prepared.fetch, path, argv, env, rest, config)
        if isinstance(answer, bytes):
            rest.close()
            transfers.add(repo.pk, git_bytes=len(answer), git_requests=1)
            return HttpResponse(
                answer, content_type=f"application/x-git-{service}-result", headers=NO_CACHE_HEADERS
            )
        rest = answer
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response
    proc = popen_git(argv, env=env, stderr=stderr)
    feeder = Feeder(proc, prepared.prefix, rest)
    feeder.start()
    return GitProcessResponse(
        proc,
        content_type=f"application/x-git-{service}-result",
        feeder=feeder,
        on_exit=on_exit,
        stderr_file=stderr,
        finish_when_abandoned=service == "receive-pack",
        relay=relay,
        before_end=before_end,
    )


def _fetch_answer(
    req: GitRequest,
    fetch: FetchRequest,
    path: Path,
    argv: list[str],
    env: dict[str, str],
    body: BinaryIO,
    config: list[tuple[str, str]],
) -> bytes | BinaryIO:
    """What answers an upload-pack request without streaming git's output (bytes), or the body
    git is to read. ls-refs about HEAD, branches and tags comes from the cache keyed by the ref
    files; then the ids and names the request gives are screened (repos.fetchscreen)."""
    if fetch.v2 and fetch.command == "ls-refs":
        head = body.read(advertisement.LS_REFS_MAX_BODY + 1)
        body.seek(0)
        cached = advertisement.ls_refs(path, argv, env, head)
        if cached is not None:
            return cached
    screened = fetchscreen.screen(
        req, fetch, path=path, hide_values=hiderefs.values_for("upload-pack", config)
    )
    if screened.answer is not None:
        return screened.answer
    if screened.body is None:
        return body
    body.close()
    if not screened.hidden_info:
        return screened.body
    # object-info with hidden ids: a few lines, answered whole once git has told the rest.
    with screened.body:
        ran = run_git(argv, env=env, input=screened.body.read(), check=False)
    return (
        fetchscreen.object_info_answer(fetch, ran.stdout, screened.hidden_info)
        if ran.returncode == 0
        else ran.stdout
    )


def _acknowledging(repo: Repository, push) -> bytes:
    """What the push_acknowledging receivers have to say (they may hold the acknowledgement:
    replication's REPLICATION_MIN_ACKS), as lines for the client. Nothing is asked when no
    acknowledgement is awaited."""
    if push is None or not settings.REPLICATION_MIN_ACKS:
        return b""
    generation = RepositoryChange.objects.filter(push=push).values_list("generation", flat=True).first()
    if generation is None:
        return b""
    replies = signals.push_acknowledging.send_robust(
        sender=Push, repository_id=repo.pk, generation=generation
    )
    return "".join(f"{reply}\n" for _receiver, reply in replies if isinstance(reply, str) and reply).encode()


def _record_legacy(repo: Repository, messages) -> None:
    # The push is recorded already; a failure to count its legacy objects must not undo that.
    try:
        record_legacy(repo, messages, source="push")
    except Exception:
        log.exception("could not record the legacy objects of a push to %s", repo.full_name)
