"""What an SSH client asked for (SSH_ORIGINAL_COMMAND), read as data and never given to a
shell: one of git's three services and one repository path, or a clear refusal.

git sends `git-upload-pack '/owner/name.git'` (the path single-quoted the way its sq_quote
writes it); other clients write `git upload-pack`, leave out the leading `/` or the `.git`, or
add a trailing `/`. Quoting is undone with POSIX rules, and what comes out must be exactly
`owner/name` under the site's own naming rules, so `..`, `~`, absolute paths elsewhere, a
second argument or anything a shell would act on is refused before anything runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from repos.names import validate_repo_name, validate_username

SERVICES = {
    "git-upload-pack": "upload-pack",
    "git-receive-pack": "receive-pack",
    "git-upload-archive": "upload-archive",
}
MAX_COMMAND = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PATH = re.compile(r"^/?(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/?$")


class CommandRefused(Exception):
    """Why the command is not served: one line for the client's terminal."""


@dataclass(frozen=True)
class GitCommand:
    service: str  # "upload-pack", "receive-pack" or "upload-archive"
    owner: str
    name: str


def shown(text: str, limit: int = 120) -> str:
    """A client's text as we quote it back: printable, short."""
    text = _CONTROL.sub("?", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse(command: str) -> GitCommand:
    if len(command) > MAX_COMMAND:
        raise CommandRefused("command too long")
    if _CONTROL.search(command):
        raise CommandRefused("control characters are not allowed in the command")
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        raise CommandRefused(f"cannot parse the command {shown(command)!r}") from None
    if len(words) >= 2 and words[0] == "git" and f"git-{words[1]}" in SERVICES:
        words = [f"git-{words[1]}", *words[2:]]
    if not words or words[0] not in SERVICES:
        verb = shown(words[0]) if words else ""
        raise CommandRefused(
            f"{verb!r} is not served: only git-upload-pack, git-receive-pack and git-upload-archive"
        )
    if len(words) != 2:
        raise CommandRefused(f"{words[0]} takes one repository path (shell syntax is not interpreted)")
    return GitCommand(SERVICES[words[0]], *_repository(words[1]))


def _repository(path: str) -> tuple[str, str]:
    match = _PATH.match(path)
    if match is None:
        raise CommandRefused(f"not a repository path: {shown(path)!r} (use owner/name.git)")
    owner, name = match["owner"], match["name"]
    try:
        validate_username(owner.lower())
        validate_repo_name(name)
    except ValidationError:
        raise CommandRefused(f"not a repository path: {shown(path)!r} (use owner/name.git)") from None
    return owner, name
