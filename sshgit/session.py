"""One SSH session, run by the gateway (sshgit.gateway) in a child process whose fds 0, 1 and
2 are the SSH channel: the key sshd accepted (checked again here, so a key removed or an
account deactivated since the connection opened is refused on its next command), the command,
who may do it (the access rule smart HTTP asks, repos.gitaccess.authorize), then git
(sshgit.transport).

Every refusal is one `hostsite: ...` line on the channel's stderr and a non-zero exit, before
anything runs. A repository the key may not read, and one that does not exist, get the same
words.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass

from django.conf import settings

from repos import selectors as repo_selectors
from repos.gitaccess import GitClient
from repos.gitaccess.authorize import authorize_user, refuse_push_while_importing
from repos.gitprotocol import GitHTTPError, Pusher, parse_git_protocol
from repos.models import Repository, Role
from repos.redirects import RepositoryMoved
from sshgit import commands, selectors, services, transport
from workspaces.visibility import view_for

log = logging.getLogger(__name__)

GREETING = "Hi {who}! You've authenticated, but hostsite does not provide shell access."


class Refused(Exception):
    pass


@dataclass(frozen=True)
class Grant:
    repo: Repository
    pusher: Pusher
    viewer: object | None  # whose visibility applies to what is read (None: anonymous)


def serve(*, key_id: int, command: str | None, protocol: str | None, remote: str) -> int:
    try:
        return _serve(key_id, command, protocol, remote)
    except Refused as exc:
        _say(f"hostsite: {exc}")
        return 1
    except BrokenPipeError:
        return 1  # the client went away
    except Exception:
        log.exception("SSH session of key %s failed (command %r)", key_id, command)
        _say("hostsite: internal error; it has been logged")
        return 1


def _serve(key_id: int, command: str | None, protocol: str | None, remote: str) -> int:
    key = selectors.session_key(key_id)
    if key is None:
        raise Refused("this key is not, or no longer, authorized")
    services.touch_last_used(key)
    if not command or not command.strip():
        if key.user is not None:
            who = key.user.username
        else:
            who = f"{key.repository.full_name if key.repository else ''} (deploy key {key.title!r})"
        _say(GREETING.format(who=commands.shown(who)))
        return 1
    try:
        cmd = commands.parse(command)
    except commands.CommandRefused as exc:
        raise Refused(str(exc)) from None
    try:
        protocol = parse_git_protocol(protocol)
    except GitHTTPError:
        raise Refused("invalid GIT_PROTOCOL") from None
    grant = _deploy_grant(key, cmd) if key.is_deploy_key else _user_grant(key.user, cmd)
    client = GitClient(remote_addr=remote, base_url=settings.SITE_URL or _local_base(), protocol=protocol)
    log.info("ssh %s %s/%s by key %s from %s", cmd.service, cmd.owner, cmd.name, key.pk, remote)
    if cmd.service == "upload-pack":
        return transport.upload_pack(grant.repo, grant.pusher, protocol, client)
    if cmd.service == "receive-pack":
        return transport.receive_pack(grant.repo, grant.pusher, protocol, client)
    return transport.upload_archive(grant.repo, grant.pusher, view_for(grant.repo, grant.viewer))


def _not_found(cmd: commands.GitCommand) -> Refused:
    return Refused(f"repository '{cmd.owner}/{cmd.name}' not found, or this key has no access to it")


def _user_grant(user, cmd: commands.GitCommand) -> Grant:
    service = "receive-pack" if cmd.service == "receive-pack" else "upload-pack"
    owner, name = cmd.owner, cmd.name
    try:
        try:
            repo, pusher = authorize_user(user, owner, name, service)
        except RepositoryMoved as moved:
            # No redirects over SSH: serve the new place, and say so once.
            _say(f"hostsite: {owner}/{name} is now {moved.repo.full_name}; update your remote's URL")
            repo, pusher = authorize_user(user, moved.repo.owner.username, moved.repo.name, service)
    except GitHTTPError as exc:
        if exc.status in (401, 404):
            raise _not_found(cmd) from None
        raise Refused(exc.message) from None
    return Grant(repo, pusher, user)


def _deploy_grant(key, cmd: commands.GitCommand) -> Grant:
    """A deploy key reaches its one repository, which it reads as anyone may (hidden work stays
    hidden); a read-write key pushes as the admin who added it, with a maintainer's rights."""
    repo = key.repository
    named = repo_selectors.repository_by_name(cmd.owner, cmd.name)
    moved = named is None
    if moved:
        named = repo_selectors.redirected_repository(cmd.owner, cmd.name)
    if named is None or named.pk != repo.pk:
        raise _not_found(cmd)
    if moved:
        # As for a person's key (_user_grant): served at the new place, and said once.
        _say(f"hostsite: {cmd.owner}/{cmd.name} is now {repo.full_name}; update your remote's URL")
    if cmd.service != "receive-pack":
        return Grant(repo, Pusher(None, None), None)
    if not key.read_write:
        raise Refused("this deploy key is read-only")
    creator = key.created_by
    if creator is None or not creator.is_active:
        raise Refused(
            "the account that added this deploy key is no longer active; an admin must add it again"
        )
    if not services.can_manage_deploy_keys(creator, repo):
        # Its pushes are that admin's: they end with the admin's rights, as GitLab's do.
        raise Refused(
            "the account that added this deploy key no longer administers this repository; "
            "an admin must add it again"
        )
    try:
        refuse_push_while_importing(repo)
    except GitHTTPError as exc:
        raise Refused(exc.message) from None
    return Grant(repo, Pusher(creator, Role.MAINTAINER), None)


def _local_base() -> str:
    host = settings.HOST if ":" not in settings.HOST else f"[{settings.HOST}]"
    return f"http://{host}:{settings.PORT}/"


def _say(line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
