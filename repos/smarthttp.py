"""Git smart HTTP: run upload-pack / receive-pack with --stateless-rpc and stream both ways.

Nothing holds a pack in memory: a request body is copied into git's stdin by a feeder thread
in 64 KiB chunks while the response iterates git's stdout. Bodies are checked before git
starts: the pkt-line framing of an upload-pack request and of a push's command list, and the
inflated size of a gzip body (which is spooled to a temporary file, so a gzip bomb gets a
clear 413 rather than a broken 200). When the client goes away, gunicorn closes the response
and repos.gitstream kills and reaps git.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.http import HttpResponse

from repos import advertisement, extensions, objectcheck, pktline, push_spool, pushes, sideband, transfers
from repos.git import popen_git
from repos.gitstream import CHUNK, NO_CACHE_HEADERS, Feeder, GitProcessResponse
from repos.models import Repository, Role
from repos.objectcheck_services import record_legacy

log = logging.getLogger(__name__)

SERVICES = {"git-upload-pack": "upload-pack", "git-receive-pack": "receive-pack"}
# Git-Protocol is `version=2` plus optional `:`-separated key=value pairs; nothing else gets
# through to git's environment.
_PROTOCOL_RE = re.compile(r"^[A-Za-z0-9._-]+(=[A-Za-z0-9._-]*)?(:[A-Za-z0-9._-]+(=[A-Za-z0-9._-]*)?)*$")


class GitHTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Pusher:
    """Who is talking to git, decided by the view before git starts."""

    user: object | None
    role: Role | None
    can_read: bool = True

    @property
    def role_label(self) -> str:
        """The role the hooks see: signed-in users who may read a public repository without
        being members are readers."""
        if self.role is not None:
            return self.role.label
        return Role.READER.label if self.user is not None and self.can_read else ""


def parse_git_protocol(value: str | None) -> str | None:
    if not value:
        return None
    if len(value) > 256 or not _PROTOCOL_RE.match(value):
        raise GitHTTPError(400, "invalid Git-Protocol header")
    return value


def wants_v2(protocol: str | None) -> bool:
    return bool(protocol) and "version=2" in protocol.split(":")


def repository_dir(repo: Repository) -> Path:
    """The repository's directory, refusing anything that resolves outside REPO_ROOT (a
    symlink planted inside it, say)."""
    path = repo.disk_path
    root = Path(settings.REPO_ROOT).resolve()
    resolved = path.resolve()
    if resolved.parent.parent != root or not (resolved / "HEAD").is_file():
        log.error("refusing to serve %s: %s resolves to %s", repo.full_name, path, resolved)
        raise GitHTTPError(404, "Repository not found")
    return resolved


# --- request bodies ----------------------------------------------------------------------------


class GzipReader:
    """Inflate a gzip stream incrementally, refusing to produce more than `limit` bytes."""

    def __init__(self, raw: BinaryIO, limit: int):
        self._raw = raw
        self._limit = limit
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buffer = b""
        self._produced = 0
        self._eof = False

    def read(self, n: int = CHUNK) -> bytes:
        while not self._buffer and not self._eof:
            data = self._inflater.unconsumed_tail or self._raw.read(CHUNK)
            if not data:
                self._eof = True
                if not self._inflater.eof:
                    raise GitHTTPError(400, "truncated gzip request body")
                break
            try:
                out = self._inflater.decompress(data, CHUNK)
            except zlib.error:
                raise GitHTTPError(400, "invalid gzip request body") from None
            self._produced += len(out)
            if self._produced > self._limit:
                raise GitHTTPError(
                    413, f"request body inflates to more than {self._limit // (1024 * 1024)} MiB"
                )
            self._buffer = out
            if self._inflater.eof:
                self._eof = True
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out


def spool(stream: BinaryIO, *, limit: int, what: str) -> BinaryIO:
    """Copy a stream into a temporary file (memory up to 1 MiB), at most `limit` bytes."""
    spooled = tempfile.SpooledTemporaryFile(max_size=1024 * 1024)  # noqa: SIM115 - returned
    total = 0
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            spooled.close()
            raise GitHTTPError(413, f"{what} is larger than {limit // (1024 * 1024)} MiB")
        spooled.write(chunk)
    spooled.seek(0)
    return spooled


@dataclass(frozen=True)
class PreparedBody:
    prefix: bytes  # already read from the request, goes to git first
    rest: BinaryIO  # the remainder of the request body
    commands: list[tuple[str, str, str]]  # a push's (old, new, ref) commands


def prepare_body(service: str, raw: BinaryIO, *, gzip: bool, protocol: str | None) -> PreparedBody:
    """Validate a request body before git sees it."""
    if gzip:
        raw = spool(
            GzipReader(raw, settings.GIT_HTTP_MAX_INFLATED),
            limit=settings.GIT_HTTP_MAX_INFLATED,
            what="inflated request body",
        )
    try:
        if service == "upload-pack":
            body = (
                raw if gzip else spool(raw, limit=settings.GIT_HTTP_MAX_UPLOAD_REQUEST, what="fetch request")
            )
            pktline.validate_upload_request(body, protocol_v2=wants_v2(protocol))
            body.seek(0)
            return PreparedBody(b"", body, [])
        prefix, commands = pktline.read_receive_commands(raw)
        return PreparedBody(prefix, raw, commands)
    except pktline.PktLineError as exc:
        raise GitHTTPError(400, f"malformed request: {exc}") from None


def _wants(body: BinaryIO) -> list[str]:
    """The ids a fetch asks for: its wants, and the objects an object-info asks about (their
    sizes say as much about hidden content as the objects do)."""
    try:
        ids = pktline.upload_wants(body)
        body.seek(0)
        ids += [
            payload[4:].strip().decode("ascii", "replace")
            for _raw, payload in pktline.iter_pkts(body)
            if payload is not None and payload.startswith(b"oid ")
        ]
        return ids
    finally:
        body.seek(0)


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


def _hook_env(repo: Repository, pusher: Pusher, updates_file: str, commands, spool_id: str) -> dict[str, str]:
    role = pusher.role_label
    return {
        **extensions.hook_environment(repo, pusher.user, role, commands),
        "HOSTSITE_PUSHER": pusher.user.username,
        "HOSTSITE_PUSHER_ID": str(pusher.user.pk),
        "HOSTSITE_ROLE": role,
        "HOSTSITE_REPO_ID": str(repo.pk),
        "HOSTSITE_REF_UPDATES_FILE": updates_file,
        # post-receive spools the push here (repos.push_spool); this process records it, and
        # the replay leaves a young file alone while this process lives.
        "HOSTSITE_PUSH_SPOOL_DIR": str(push_spool.spool_dir()),
        "HOSTSITE_PUSH_ID": spool_id,
        "HOSTSITE_PUSH_PROTOCOL": "http",
        "HOSTSITE_SPOOL_WRITER_PID": str(os.getpid()),
    }


def advertise(
    repo: Repository,
    service: str,
    pusher: Pusher,
    protocol: str | None,
    client: extensions.GitClient | None = None,
) -> GitProcessResponse | HttpResponse:
    path = repository_dir(repo)
    env = {"GIT_PROTOCOL": protocol} if protocol else {}
    config = extensions.git_config(
        repo, pusher.user, pusher.role_label, service=service, advertise=True, refs=None, client=client
    )
    # v0/v1 advertisements start with the service line, as git http-backend writes it; in v2
    # the capability advertisement stands alone.
    prefix = b""
    if not wants_v2(protocol) or service == "receive-pack":
        prefix = pktline.encode(f"# service=git-{service}\n") + pktline.FLUSH
    content_type = f"application/x-git-{service}-advertisement"
    body = None
    if service == "receive-pack" and (shown := advertisement.shown_prefixes(config)) is not None:
        # A pusher shown a few namespaces: listed by prefix, without reading every ref.
        body = advertisement.write(path, shown, _with_limits(service, config), protocol)
    elif service == "upload-pack" and wants_v2(protocol):
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
    client: extensions.GitClient | None = None,
) -> GitProcessResponse | HttpResponse:
    path = repository_dir(repo)
    # Push is always protocol v0 (git has no v2 push); GIT_PROTOCOL only matters for fetch.
    protocol = protocol if service == "upload-pack" else None
    prepared = prepare_body(service, body, gzip=gzip, protocol=protocol)
    commands = prepared.commands
    env = {"GIT_PROTOCOL": protocol} if protocol else {}
    on_exit = relay = before_end = None
    if service == "receive-pack":
        fd, updates_path = tempfile.mkstemp(prefix="hostsite-push-", suffix=".refs")
        os.close(fd)
        spool_id = push_spool.new_spool_id()
        env.update(_hook_env(repo, pusher, updates_path, commands, spool_id))
        # The object checks' messages reach the client on side-band 2: read them on the way
        # (legacy objects are recorded, refusals explained). Without a side-band they go to
        # git's stderr and the client sees none of them; nothing to add to.
        if sideband.negotiated(pktline.receive_capabilities(prepared.prefix)):
            relay = sideband.FsckRelay()

        def record_updates_file(text: str):
            # post-receive could not spool (a full disk): record what it wrote here instead.
            updates = pushes.parse_updates(text)
            return (
                pushes.push_record(
                    repo=repo,
                    pusher=pusher.user,
                    updates=updates,
                    protocol="http",
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
            return b"" if recording.attempt() else f"{push_spool.DELAYED_MESSAGE}\n".encode()

        def on_exit(returncode: int, _sent: int) -> None:
            # Also when the client left before the end: the push happened all the same. A
            # push git rejected spooled nothing and records nothing.
            recording.attempt()
            if recording.push is not None and relay is not None and relay.messages:
                _record_legacy(repo, relay.messages)

    refs = [ref for _old, _new, ref in commands] if service == "receive-pack" else None
    config = extensions.git_config(
        repo, pusher.user, pusher.role_label, service=service, advertise=False, refs=refs, client=client
    )
    if service == "receive-pack":
        # Every fsck message id at the severity the object checks give it (repos.objectcheck).
        config = [*objectcheck.git_config("receive", objectcheck.repository_overrides(repo)), *config]
    if service == "upload-pack":

        def on_exit(_returncode: int, sent: int) -> None:
            # The origin's share of clone and fetch traffic, for the offload figure.
            transfers.add(repo.pk, git_bytes=sent, git_requests=1)

    argv = _service_argv(service, path, advertise=False, config=config)
    if service == "upload-pack" and wants_v2(protocol):
        head = prepared.rest.read(advertisement.LS_REFS_MAX_BODY + 1)
        prepared.rest.seek(0)
        answer = advertisement.ls_refs(path, argv, env, head)
        if answer is not None:
            # ls-refs about HEAD, branches and tags: from the cache keyed by the ref files.
            prepared.rest.close()
            transfers.add(repo.pk, git_bytes=len(answer), git_requests=1)
            return HttpResponse(
                answer, content_type=f"application/x-git-{service}-result", headers=NO_CACHE_HEADERS
            )
        # Only a fetch carries wants (ls-refs was answered above or asks for no objects).
        refusal = extensions.refused_wants(
            repo, pusher.user, pusher.role_label, lambda: _wants(prepared.rest)
        )
        if refusal:
            prepared.rest.close()
            raise GitHTTPError(403, refusal)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response
    proc = popen_git(argv, env=env, stderr=stderr)
    feeder = Feeder(proc, prepared.prefix, prepared.rest)
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


def _record_legacy(repo: Repository, messages) -> None:
    # The push is recorded already; a failure to count its legacy objects must not undo that.
    try:
        record_legacy(repo, messages, source="push")
    except Exception:
        log.exception("could not record the legacy objects of a push to %s", repo.full_name)
