"""What an upload-pack request may name, decided before git reads it, so that nothing a viewer
may not see answers differently from something that does not exist.

git serves by id whatever its object store holds: protocol v2 serves any `want` (hideRefs only
hide refs), ACKs any `have` it holds (commits and blobs alike), refuses a `shallow` that names a
blob while it skips an unknown one, and object-info gives the size of any object. So the ids a
request names are asked of the git access backends (repos.gitaccess `hidden_objects`) and:

- a hidden `want` gets git's own answer for an unknown object ("not our ref <id>"), naming the
  first want that is hidden or missing, as git names the first it cannot serve;
- a hidden `have` or `shallow` line names the null id instead when git reads it: git answers
  as for any unknown id (no ACK; ignored), and the request keeps its shape (a fetch with haves
  is answered with acknowledgments, one without them with a pack);
- object-info answers a hidden id as git answers an unknown one: the id as sent and no size;
- `deepen-not` naming a ref under the request's hideRefs (as git would expand the name) is
  refused whether or not that ref exists.

Repositories where nothing is hidden from the viewer cost one call to the backends.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from gitcore import catfile, fetchrequest, hiderefs, pktline
from gitcore.fetchrequest import FetchRequest
from repos import gitaccess
from repos.gitaccess import GitRequest
from repos.gitprotocol import GitHTTPError


@dataclass(frozen=True)
class Screened:
    body: BinaryIO | None = None  # a rewritten request for git (None: the original)
    answer: bytes | None = None  # written in git's place: git does not run
    hidden_info: tuple[int, ...] = ()  # object-info: which of its `oid` lines answer "unknown"


PASS = Screened()


def not_our_ref(oid: str) -> bytes:
    """upload-pack's answer to a want it cannot serve, byte for byte (an ERR pkt-line with no
    newline; git then exits)."""
    return pktline.encode(f"ERR upload-pack: not our ref {oid}")


def refuse_hidden_names(request: FetchRequest, hide_values: list[str]) -> None:
    for name in request.values("deepen-not"):
        if hiderefs.names_hidden(name, hide_values):
            raise GitHTTPError(400, f"deepen-not {name!r} names no ref this repository shows")


def screen(req: GitRequest, request: FetchRequest, *, path: Path, hide_values: list[str]) -> Screened:
    """What git is to read of this request, or the answer written in its place; GitHTTPError
    (400) for a deepen-not naming a hidden ref. `hide_values`: the request's hideRefs."""
    refuse_hidden_names(request, hide_values)
    ids = request.ids()
    if not ids:
        return PASS
    hidden = gitaccess.hidden_objects(req, frozenset(ids))
    if not hidden:
        return PASS
    wants = request.values("want")
    if any(oid in hidden for oid in wants):
        return Screened(answer=not_our_ref(first_unserved(path, wants, hidden)))
    replace: dict[int, bytes | None] = {}
    for word in ("have", "shallow"):
        for i in request.by_word.get(word, ()):
            if (oid := request.lines[i].value) in hidden:
                replace[i] = pktline.encode(f"{word} {'0' * len(oid)}\n")
    # object-info's lines are left out, and their answers written in (object_info_answer).
    info = tuple(request.by_word.get("oid", ()))
    hidden_info = tuple(n for n, i in enumerate(info) if request.lines[i].value in hidden)
    replace.update({info[n]: None for n in hidden_info})
    return Screened(body=fetchrequest.spooled(request.rewritten(replace)), hidden_info=hidden_info)


def first_unserved(path: Path, wants: list[str], hidden: set[str]) -> str:
    """The first want, in the request's order, that git could not serve or that is hidden."""
    for oid in wants:
        if oid in hidden:
            return oid
        if catfile.info(path, oid) is None:
            return oid
    raise AssertionError("a hidden want was expected")


def object_info_answer(request: FetchRequest, git_answer: bytes, hidden_info: tuple[int, ...]) -> bytes:
    """object-info's answer with the line git writes for an object it does not have (the id as
    sent, then a space when sizes were asked for) in place of each hidden id, in the request's
    order; git answered the others, in order, after its attribute line. An answer that is not
    a list of objects (a git that refuses the command) is passed on as it is."""
    info = request.by_word.get("oid", [])
    if not hidden_info or not info:
        return git_answer
    sizes = any(line.raw[4:].rstrip(b"\n") == b"size" for line in request.lines)
    answers = [payload for _raw, payload in pktline.iter_pkts(io.BytesIO(git_answer)) if payload is not None]
    if sizes and answers[:1] == [b"size"]:
        answers = answers[1:]
    elif sizes and len(hidden_info) < len(info):
        return git_answer  # not an object-info answer
    if len(answers) != len(info) - len(hidden_info):
        return git_answer
    given = iter(answers)
    out = [b"size"] if sizes else []
    for n, i in enumerate(info):
        out.append(
            f"{request.lines[i].as_sent}{' ' if sizes else ''}".encode() if n in hidden_info else next(given)
        )
    return b"".join(pktline.encode(payload) for payload in out) + pktline.FLUSH
