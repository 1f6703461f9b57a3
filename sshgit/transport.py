"""git's three services over an SSH channel, through the very code that serves smart HTTP
(repos.pipeline), so that hiding, the ref policy, proc-receive, the object checks, the hooks
and the push's record are the same whichever way a client came.

- receive-pack: the advertisement, then one request (the commands and the pack), exactly as a
  smart HTTP push is two requests: the per-push configuration depends on the commands, which
  arrive only after the advertisement.
- upload-pack, protocol v2: stateless by design (each command stands alone), so the capability
  advertisement and then each request as smart HTTP serves one POST: ls-refs from the cache,
  wants checked against what the client may not see.
- upload-pack, protocol v0/v1: the negotiation is stateful (the client sends its haves once),
  so one `git upload-pack` serves the whole conversation; hidden refs are hidden by its
  configuration, and each round the client sends is screened on its way to git as a smart
  HTTP request is (sshgit.fetchrelay).
- upload-archive: the arguments are read first, the tree-ish resolved under the viewer's
  visibility (the rule of the web's archive route), and git is given the commit id.
"""

from __future__ import annotations

import os
import subprocess
import threading
from typing import BinaryIO, cast

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from gitcore import hiderefs, pktline
from gitcore.git import piped, popen_git
from gitcore.gitstream import GitProcessResponse
from gitcore.oids import object_format
from hostsite.celery import publishes_held, send_held
from repos import gitaccess, pipeline, transfers
from repos.gitaccess import GitClient
from repos.gitprotocol import GitHTTPError, Pusher, repository_dir, wants_v2
from repos.models import Repository
from sshgit import archiveargs, channel
from sshgit.channel import ChannelReader, error_packet, read_request, write_all
from sshgit.fetchrelay import FetchRelay

OUT = 1
ERR = 2
OUT_CHUNK = 1024 * 1024
# A stateful fetch that hears nothing from its client for this long gives up.
IDLE_TIMEOUT = 600


class ChannelError(Exception):
    """A refusal after the conversation started: said in git's terms on the channel."""


def _send(response: HttpResponseBase) -> None:
    """Write a response of repos.pipeline to the channel; always close it (that reaps git and
    runs its on-exit work: the push's record, the transfer count)."""
    try:
        if isinstance(response, GitProcessResponse) and response.passes_through:
            response.bytes_sent = channel.splice_out(piped(response.proc.stdout).fileno())
            response.proc.wait()
        elif isinstance(response, StreamingHttpResponse):
            for chunk in response:
                write_all(OUT, chunk)
        else:
            write_all(OUT, cast(HttpResponse, response).content)
    finally:
        response.close()


def upload_pack(repo: Repository, pusher: Pusher, protocol: str | None, client: GitClient) -> int:
    if protocol is not None and wants_v2(protocol):
        return _upload_pack_v2(repo, pusher, protocol, client)
    path = repository_dir(repo)
    req = pipeline.GitCall(repo, "upload-pack", pusher, protocol, "ssh", client).git_request()
    config = gitaccess.git_config(req, advertise=False, refs=None)
    argv = [arg for key, value in config for arg in ("-c", f"{key}={value}")]
    argv += ["upload-pack", "--strict", f"--timeout={IDLE_TIMEOUT}", str(path)]
    env = {"GIT_PROTOCOL": protocol} if protocol else {}
    proc = popen_git(argv, env=env, stdin=subprocess.PIPE, stderr=ERR)
    reader = ChannelReader(0)
    relay = FetchRelay(
        req,
        proc,
        reader,
        fmt=object_format(path),
        hide_values=hiderefs.values_for("upload-pack", config),
        path=path,
    )
    relay.start()
    sent = 0
    try:
        sent = channel.splice_out(piped(proc.stdout).fileno())
    except OSError:
        proc.kill()  # the client went away
    finally:
        proc.wait()
        reader.stop()
        relay.join()
        reader.release()
        transfers.add(repo.pk, git_bytes=sent, git_requests=1)
    if relay.refusal is not None:
        write_all(OUT, relay.refusal)
        return 128
    return proc.returncode


def _upload_pack_v2(repo: Repository, pusher: Pusher, protocol: str, client: GitClient) -> int:
    call = pipeline.GitCall(repo, "upload-pack", pusher, protocol, "ssh", client)
    _send(pipeline.advertise(call, service_line=False))
    reader = ChannelReader(0)
    try:
        while True:
            try:
                request = read_request(reader, limit=settings.GIT_HTTP_MAX_UPLOAD_REQUEST)
            except pktline.PktLineError as exc:
                raise ChannelError(f"malformed request: {exc}") from None
            if request is None:
                return 0
            try:
                response = pipeline.rpc(call, body=request, gzip=False)
            except GitHTTPError as exc:
                raise ChannelError(exc.message) from None
            _send(response)
    except ChannelError as exc:
        write_all(OUT, error_packet(str(exc)))
        return 1
    finally:
        reader.release()


def receive_pack(repo: Repository, pusher: Pusher, protocol: str | None, client: GitClient) -> int:
    _send(
        pipeline.advertise(
            pipeline.GitCall(repo, "receive-pack", pusher, protocol, "ssh", client), service_line=False
        )
    )
    reader = ChannelReader(0)
    try:
        call = pipeline.GitCall(repo, "receive-pack", pusher, None, "ssh", client)
        response = pipeline.rpc(call, body=cast(BinaryIO, reader), gzip=False)
    except GitHTTPError as exc:
        reader.release()
        if reader.eof and exc.status == 400:
            return 0  # the client hung up after the advertisement (nothing to push, or ls-remote)
        # Before receive-pack runs the client waits for its report: an error line on the
        # channel's stderr, then the end, is what it understands.
        write_all(ERR, f"hostsite: {exc.message}\n".encode())
        return 1
    if not isinstance(response, GitProcessResponse):
        reader.release()
        _send(response)
        return 0
    # The client keeps its side open after the pack, waiting for the report: the feeder must
    # let go of the channel once receive-pack is done, or it would wait for the client forever.
    proc = response.proc

    def release_when_done() -> None:
        proc.wait()
        reader.stop()

    watcher = threading.Thread(target=release_when_done, daemon=True)
    watcher.start()
    # The push is recorded before the client hears the end, as over HTTP; the follow-up tasks'
    # messages (cleanup, bundles, proposals, search: ~30 ms on the filesystem broker) are sent
    # after the client is let go, as nothing it could read depends on them.
    with publishes_held() as held:
        try:
            _send(response)
        finally:
            watcher.join(timeout=5)
            reader.release()
    status = proc.returncode or 0
    channel.release(status)
    send_held(held)
    return status


def upload_archive(repo: Repository, pusher: Pusher, view) -> int:
    """`git archive --remote`: the arguments checked and the tree-ish resolved by us."""
    path = repository_dir(repo)
    reader = ChannelReader(0)
    try:
        try:
            args = archiveargs.read(reader)
            argv_args = archiveargs.resolve(path, args, view)
        except archiveargs.ArchiveRefused as exc:
            write_all(OUT, pktline.encode(f"NACK {exc}\n") + pktline.FLUSH)
            return 1
    finally:
        reader.release()
    proc = popen_git(
        ["-c", "uploadArchive.allowUnreachable=true", "upload-archive", str(path)],
        stdin=subprocess.PIPE,
        stderr=ERR,
    )
    sent = 0
    try:
        stdin = piped(proc.stdin)
        stdin.write(b"".join(pktline.encode(f"argument {a}") for a in argv_args) + pktline.FLUSH)
        stdin.close()
        out = piped(proc.stdout).fileno()
        while chunk := os.read(out, OUT_CHUNK):
            write_all(OUT, chunk)
            sent += len(chunk)
    except OSError:
        proc.kill()
    finally:
        proc.wait()
        transfers.add(repo.pk, git_bytes=sent, git_requests=1)
    return proc.returncode
