"""One git request as every transport hands it to the pipeline, and the state its steps build.

A transport (smart HTTP, SSH, the replication endpoint) decides who is asking and may they
(repos.gitaccess.authorize, or the replication token), then hands a `GitCall` to the pipeline
(repos.pipeline). Each step reads the `Run` and adds to it: configuration, a finished answer,
work for when git exits. Nothing else is passed between them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from gitcore import oids, pktline
from repos.gitaccess import GitClient, GitRequest
from repos.gitprotocol import Pusher, repository_dir
from repos.models import Push, Repository
from repos.requestbody import PreparedBody, prepare_body

# How the client reached us, as a push's record names it ("http", "ssh"); a replica's fetch
# of everything is "replica".
REPLICA = "replica"


@dataclass(frozen=True)
class GitCall:
    """Who asks what of which repository, and how: the pipeline's whole input."""

    repo: Repository
    service: str  # "upload-pack" or "receive-pack"
    pusher: Pusher
    protocol: str | None  # the client's GIT_PROTOCOL ("version=2"); None for v0
    transport: str = "http"
    client: GitClient | None = None

    def git_env(self, *, advertise: bool) -> dict[str, str]:
        # A push request is always protocol v0 (git has no v2 push; its advertisement says
        # "version 1" when asked); GIT_PROTOCOL matters for the rest of a fetch only.
        if self.protocol and (advertise or self.service == "upload-pack"):
            return {"GIT_PROTOCOL": self.protocol}
        return {}

    def git_request(self, commands=(), capabilities: frozenset[str] = frozenset()) -> GitRequest:
        """The request as the git access backends (repos.gitaccess) see it."""
        return GitRequest(
            repository=self.repo,
            user=self.pusher.user,
            role=self.pusher.role_label,
            service=self.service,
            client=self.client,
            commands=tuple(tuple(c) for c in commands),
            capabilities=capabilities,
        )


@dataclass
class Run:
    """What the steps of one request know so far."""

    call: GitCall
    path: Path
    req: GitRequest
    env: dict[str, str]
    prepared: PreparedBody | None = None  # None: the advertisement
    body: BinaryIO | None = None  # what git is to read after the prepared prefix
    config: list[tuple[str, str]] = field(default_factory=list)
    # A finished answer: git's output is not streamed (a cached ls-refs, a screened fetch).
    answer: bytes | None = None
    on_exit: list[Callable[[int, int], None]] = field(default_factory=list)  # (returncode, bytes sent)
    before_end: list[Callable[[], bytes]] = field(default_factory=list)  # lines while the client listens
    relay: object | None = None  # reads git's side-band on its way out (repos.sideband)
    push: Push | None = None  # the push's record, once made (receive-pack)

    @classmethod
    def advertisement(cls, call: GitCall) -> Run:
        env = call.git_env(advertise=True)
        return cls(call=call, path=repository_dir(call.repo), req=call.git_request(), env=env)

    @classmethod
    def request(cls, call: GitCall, body: BinaryIO, *, gzip: bool) -> Run:
        """The request read: a push's commands and capabilities, a fetch's command and ids,
        each checked before git starts (repos.requestbody)."""
        path = repository_dir(call.repo)
        env = call.git_env(advertise=False)
        protocol = env.get("GIT_PROTOCOL")
        prepared = prepare_body(
            call.service, body, gzip=gzip, protocol=protocol, fmt=oids.object_format(path)
        )
        pushing = call.service == "receive-pack"
        capabilities = pktline.receive_capabilities(prepared.prefix) if pushing else frozenset()
        req = call.git_request(prepared.commands, capabilities)
        return cls(call=call, path=path, req=req, env=env, prepared=prepared, body=prepared.rest)

    def argv(self) -> list[str]:
        """git's arguments for this run, with the configuration the steps have made so far."""
        return service_argv(self.call.service, self.path, advertise=self.prepared is None, config=self.config)

    def exited(self, returncode: int, sent: int) -> None:
        for step in self.on_exit:
            step(returncode, sent)

    def ending(self) -> bytes:
        return b"".join(step() for step in self.before_end)


def with_limits(service: str, config: list[tuple[str, str]]) -> list[tuple[str, str]]:
    if service == "receive-pack":
        return [("receive.maxInputSize", str(settings.GIT_MAX_PUSH_SIZE)), *config]
    return config


def service_argv(service: str, path: Path, *, advertise: bool, config: list[tuple[str, str]]) -> list[str]:
    argv = []
    for key, value in with_limits(service, config):
        argv += ["-c", f"{key}={value}"]
    argv += [service, "--stateless-rpc"]
    if advertise:
        argv.append("--advertise-refs")
    argv.append(str(path))
    return argv
