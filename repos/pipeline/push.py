"""The steps of a push (receive-pack): the hooks (answered in this process: the policy's
pre-receive and the backends' handlers, gitcore.hooksocket) and the push's record, the
acknowledgements replication may hold it for, and the object checks."""

from __future__ import annotations

import logging
import os
import tempfile

from django.conf import settings

from gitcore import hooksocket
from gitcore.git import git_environment
from repos import gitaccess, objectcheck, push_spool, pushes, sideband, signals
from repos.hooks import pre_receive
from repos.models import Push, RepositoryChange
from repos.objectcheck_services import record_legacy
from repos.pipeline.call import Run

log = logging.getLogger(__name__)


def record(run: Run) -> None:
    """The hooks that decide are answered by this process while git runs, with who pushes and
    the repository's rules; post-receive learns where to spool what moved (repos.push_spool),
    and this process records it after git exits, while the client still listens."""
    fd, updates_path = tempfile.mkstemp(prefix="hostsite-push-", suffix=".refs")
    os.close(fd)
    spool_id = push_spool.new_spool_id()
    env = _hook_env(run, updates_path, spool_id)
    hooks = hooksocket.register(run.path, git_environment({**run.env, **env}), hook_handlers())
    run.env.update(env)
    run.env.update(hooks)
    call = run.call

    def record_updates_file(text: str):
        # post-receive could not spool (a full disk): record what it wrote here instead.
        updates = pushes.parse_updates(text)
        if not updates:
            return None
        return pushes.push_record(
            repo=call.repo,
            pusher=call.pusher.user,
            updates=updates,
            protocol=call.transport,
            push_options=pushes.parse_push_options(text),
        )

    recording = push_spool.LiveRecording(
        repository_id=call.repo.pk,
        spool_id=spool_id,
        updates_file=updates_path,
        record_fallback=record_updates_file,
    )

    def before_end() -> bytes:
        # Whatever post-receive spooled did happen: record it while the client still listens,
        # so it can be told if the record has to wait for the replay.
        recorded = recording.attempt()
        run.push = recording.push
        return b"" if recorded else f"{push_spool.DELAYED_MESSAGE}\n".encode()

    def on_exit(_returncode: int, _sent: int) -> None:
        # Also when the client left before the end: the push happened all the same. A push
        # git rejected spooled nothing and records nothing.
        hooksocket.unregister(hooks)
        recording.attempt()
        run.push = recording.push

    run.before_end.append(before_end)
    run.on_exit.append(on_exit)


def hook_handlers() -> dict[str, hooksocket.Handler]:
    """What answers each hook of a push in this process: the one policy's pre-receive, then what
    the access backends handle (workspaces' proc-receive)."""
    return {"pre-receive": pre_receive.handle, **gitaccess.hook_handlers()}


def _hook_env(run: Run, updates_file: str, spool_id: str) -> dict[str, str]:
    req, user = run.req, run.call.pusher.user
    return {
        **gitaccess.push_env(req),
        "HOSTSITE_PUSHER": user.username,
        "HOSTSITE_PUSHER_ID": str(user.pk),
        "HOSTSITE_ROLE": req.role,
        "HOSTSITE_REPO_ID": str(req.repository.pk),
        "HOSTSITE_REF_UPDATES_FILE": updates_file,
        # post-receive spools the push here (repos.push_spool); this process records it, and
        # the replay leaves a young file alone while this process lives.
        "HOSTSITE_PUSH_SPOOL_DIR": str(push_spool.spool_dir()),
        "HOSTSITE_PUSH_ID": spool_id,
        "HOSTSITE_PUSH_PROTOCOL": run.call.transport,
        "HOSTSITE_SPOOL_WRITER_PID": str(os.getpid()),
    }


def acknowledgements(run: Run) -> None:
    """What the push_acknowledging receivers have to say (they may hold the acknowledgement:
    replication's REPLICATION_MIN_ACKS), as lines for the client, once the push is recorded.
    Nothing is asked when no acknowledgement is awaited."""
    if not settings.REPLICATION_MIN_ACKS:
        return
    repository_id = run.call.repo.pk

    def acknowledging() -> bytes:
        if run.push is None:
            return b""
        generation = (
            RepositoryChange.objects.filter(push=run.push).values_list("generation", flat=True).first()
        )
        if generation is None:
            return b""
        replies = signals.push_acknowledging.send_robust(
            sender=Push, repository_id=repository_id, generation=generation
        )
        return "".join(
            f"{reply}\n" for _receiver, reply in replies if isinstance(reply, str) and reply
        ).encode()

    run.before_end.append(acknowledging)


def object_checks(run: Run) -> None:
    """Every fsck message id at the severity the object checks give it (repos.objectcheck).
    Their messages reach the client on side-band 2 and are read on the way: legacy objects are
    recorded once the push is. Without a side-band they go to git's stderr and the client sees
    none of them; nothing to read."""
    repo = run.call.repo
    run.config = [*objectcheck.git_config("receive", objectcheck.repository_overrides(repo)), *run.config]
    if not sideband.negotiated(run.req.capabilities):
        return
    relay = sideband.FsckRelay()
    run.relay = relay

    def record_legacy_objects(_returncode: int, _sent: int) -> None:
        if run.push is None or not relay.messages:
            return
        # The push is recorded already; a failure to count its legacy objects must not undo that.
        try:
            record_legacy(repo, relay.messages, source="push")
        except Exception:
            log.exception("could not record the legacy objects of a push to %s", repo.full_name)

    run.on_exit.append(record_legacy_objects)
