"""Advertisements the app writes without starting git on the repository.

1. The push advertisement for a pusher who is shown only a few ref namespaces. git's
   receive-pack (2.39) reads every ref of the repository to write its advertisement and only
   then drops the hidden ones: with 100k workspace refs that is ~15 ms of every push, for a
   contributor who is shown a dozen refs (bench/workspaces.py). When a request's hideRefs hide
   everything and then expose a few prefixes (`refs/`, `!refs/heads/`, ... : what workspaces
   asks for contributors), this module writes the same advertisement from
   `git for-each-ref <prefixes>`, which seeks to each prefix instead of reading them all.
   Byte for byte what receive-pack writes (tests/repos/test_advertisement.py compares the
   two): refs sorted by name, the capabilities on the first line, `capabilities^{}` when there
   is no ref, a `version 1` line when the client asked for protocol v1.

2. The protocol v2 capability advertisement of upload-pack (the GET that starts every v2 clone
   and fetch). It lists no refs: it depends on git's version, the repository's config and the
   request's options only, so it is served from a cache instead of a git process per request.

Both come from git itself: the service run with `--advertise-refs` on an empty repository that
reads the repository's config file (as its global config) and the request's `-c` options,
cached by the config's content. So `atomic`, `push-options`, `object-format`, `agent`,
`bundle-uri` and the rest are git's own. Anything not modelled here (namespaced `^` patterns, a
repository with alternates, whose refs git advertises as `.have`) goes to git as before.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from gitcore import hiderefs, pktline
from gitcore.git import GitError, run_git

log = logging.getLogger(__name__)


def shown_prefixes(config: Sequence[tuple[str, str]]) -> list[str] | None:
    """The ref patterns a push with this request config is shown, if its hideRefs hide all of
    `refs/` and then expose prefixes only; None for any other shape.

    git tests hideRefs entries from the last to the first and the first match decides, so
    entries before a catch-all `refs/` (the repository's own config, read before `-c`) never
    matter here. Trailing slashes are dropped, as git does.
    """
    entries = hiderefs.values_for("receive-pack", config)
    if not entries or entries[0].rstrip("/") != "refs":
        return None
    prefixes = []
    for entry in entries[1:]:
        name = entry[1:].rstrip("/") if entry.startswith("!") else ""
        if not name.startswith("refs/") or "^" in name or any(c in name for c in "*?[\\"):
            return None
        prefixes.append(name)
    return prefixes


def write(
    repo_path: Path,
    prefixes: list[str],
    config: Sequence[tuple[str, str]],
    protocol: str | None,
    *,
    aliases: Sequence[tuple[str, str]] = (),
) -> bytes | None:
    """receive-pack's advertisement, or None if git must write it itself. `aliases`: (shown,
    real) prefix pairs (repos.gitaccess push_aliases): each listed ref under `real` is also
    advertised under `shown`, replacing a ref of that name. git's own advertisement (the
    fallback) has no aliases."""
    if (repo_path / "objects" / "info" / "alternates").exists():
        return None  # receive-pack would add the alternates' refs as `.have` lines
    try:
        probe = _probe(repo_path, config, protocol)
        listed = run_git(
            ["for-each-ref", "--format=%(objectname) %(refname)", *prefixes], repo=repo_path
        ).stdout
    except (GitError, OSError, ValueError):
        log.exception("falling back to receive-pack's own advertisement for %s", repo_path)
        return None
    lines = with_aliases(listed.splitlines(), aliases) if aliases else listed.splitlines()
    if not lines:
        return probe.empty  # no ref to show: what receive-pack wrote for the empty repository
    out = [probe.head, pktline.encode(lines[0] + b"\0" + probe.caps + b"\n")]
    out += [pktline.encode(line + b"\n") for line in lines[1:]]
    out.append(pktline.FLUSH)
    return b"".join(out)


def with_aliases(lines: list[bytes], aliases: Sequence[tuple[str, str]]) -> list[bytes]:
    """`<oid> <ref>` lines plus each aliased ref under its shown name, sorted by name as git
    sorts refs (bytewise); an alias replaces a listed ref of the same name."""
    refs = dict(line.split(b" ", 1)[::-1] for line in lines)
    for shown, real in aliases:
        shown_b, real_b = shown.encode(), real.encode()
        for line in lines:
            oid, _, ref = line.partition(b" ")
            if ref.startswith(real_b):
                refs[shown_b + ref[len(real_b) :]] = oid
    return [oid + b" " + ref for ref, oid in sorted(refs.items())]


def upload_pack_v2(repo_path: Path, config: Sequence[tuple[str, str]], protocol: str) -> bytes | None:
    """upload-pack's protocol v2 capability advertisement, or None if git must write it."""
    try:
        return _probe_output("upload-pack", repo_path, config, protocol)
    except (GitError, OSError, ValueError):
        log.exception("falling back to upload-pack's own advertisement for %s", repo_path)
        return None


@dataclass(frozen=True)
class Probe:
    head: bytes  # what precedes the refs: `version 1`, or nothing
    caps: bytes  # the capability string of the first line
    empty: bytes  # the whole advertisement of a repository without refs


def _probe(repo_path: Path, config: Sequence[tuple[str, str]], protocol: str | None) -> Probe:
    out = _probe_output("receive-pack", repo_path, config, protocol)
    head = b""
    pos = 0
    while pos < len(out):
        length = int(out[pos : pos + 4], 16)
        if length == 0:
            break
        payload = out[pos + 4 : pos + length]
        if b"\0" in payload:
            name, _, caps = payload.partition(b"\0")
            if not name.endswith(b" capabilities^{}"):
                raise ValueError(f"unexpected first line from receive-pack: {payload[:200]!r}")
            return Probe(head, caps.rstrip(b"\n"), out)
        head += out[pos : pos + length]  # `version 1`
        pos += length
    raise ValueError("receive-pack advertised no capabilities")


# Options that only choose which refs are shown: the probe has none, so they are left out of it
# and of its cache key (which would otherwise hold one entry per pusher).
_REF_SELECTION_KEYS = hiderefs.HIDE_KEYS | {"core.alternaterefsprefixes"}
_probes: dict[tuple[str, bytes, tuple[str, ...], str | None], bytes] = {}
_MAX_PROBES = 256


def _probe_output(
    service: str, repo_path: Path, config: Sequence[tuple[str, str]], protocol: str | None
) -> bytes:
    """What `git <service> --advertise-refs` writes for an empty repository with this
    repository's config file and this request's other `-c` options; cached by the config's
    content, so every repository with the same config shares one entry."""
    argv = tuple(
        arg
        for key, value in config
        if key.lower() not in _REF_SELECTION_KEYS
        for arg in ("-c", f"{key}={value}")
    )
    key = (service, (repo_path / "config").read_bytes(), argv, protocol)
    out = _probes.get(key)
    if out is None:
        fmt = run_git(["rev-parse", "--show-object-format"], repo=repo_path).text.strip()
        # The repository's config, read as the global one, applies to the empty repository too.
        env = {"GIT_CONFIG_GLOBAL": str(repo_path / "config")}
        if protocol:
            env["GIT_PROTOCOL"] = protocol
        out = run_git(
            [*argv, service, "--stateless-rpc", "--advertise-refs", str(_empty_repo(fmt))], env=env
        ).stdout
        if len(_probes) >= _MAX_PROBES:
            _probes.clear()
        _probes[key] = out
    return out


@functools.cache
def _empty_repo(fmt: str) -> Path:
    """An empty bare repository of this object format, made once: the capability probe."""
    if fmt not in ("sha1", "sha256"):
        raise ValueError(f"unknown object format {fmt!r}")
    path = Path(settings.VAR_DIR) / "git-probe" / f"empty-{fmt}.git"
    if not (path / "HEAD").exists():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        run_git(["init", "--quiet", "--bare", f"--object-format={fmt}", str(tmp)])
        try:
            tmp.rename(path)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not (path / "HEAD").exists():
                raise
    return path


# --- protocol v2 ls-refs -------------------------------------------------------------------------
#
# The first request of every v2 clone and fetch after the capabilities: "which refs are there".
# Its answer depends on the request and on HEAD, branches and tags only, so it is served from a
# cache keyed by the files those live in, instead of starting upload-pack each time (a bundle
# clone made three requests to the origin, and this one was most of their CPU: bench/bundles.py).
#
# The key is taken before git reads the refs, so an answer is never filed under an older state
# than the one it shows; any ref change writes a new file (git renames a lock file into place) or
# changes a directory, so the key moves with it.

LS_REFS_MAX_BODY = 64 * 1024
_LS_REFS_MAX_STATE = 1000  # loose entries under refs/heads and refs/tags; more: ask git each time
_LS_REFS_MAX_ANSWER = 1024 * 1024
_ls_refs: dict[bytes, bytes] = {}
_LS_REFS_MAX_ENTRIES = 512


def ls_refs_prefixes(body: bytes) -> list[str] | None:
    """The ref-prefixes of a v2 `ls-refs` request that asks only about HEAD, branches and tags;
    None for any other request (another command, no prefix, other namespaces)."""
    pos, payloads = 0, list[bytes | None]()
    while pos + 4 <= len(body):
        try:
            length = int(body[pos : pos + 4], 16)
        except ValueError:
            return None
        if length < 4:
            payloads.append(None)
            pos += 4
            continue
        payloads.append(body[pos + 4 : pos + length])
        pos += length
    if not payloads or payloads[0] != b"command=ls-refs\n":
        return None
    prefixes = [
        p[len(b"ref-prefix ") :].strip().decode("utf-8", "replace")
        for p in payloads
        if p and p.startswith(b"ref-prefix ")
    ]
    if not prefixes or not all(p == "HEAD" or p.startswith(("refs/heads/", "refs/tags/")) for p in prefixes):
        return None
    return prefixes


def _ref_state(repo_path: Path) -> bytes | None:
    """A digest of every file HEAD, branches and tags are read from (packed-refs, loose refs and
    their directories, or reftable's table list); None when there are too many to stat."""
    entries = []
    for name in ("HEAD", "packed-refs", "reftable/tables.list"):
        try:
            st = os.stat(repo_path / name)
        except FileNotFoundError:
            continue
        entries.append(f"{name} {st.st_ino} {st.st_size} {st.st_mtime_ns}")
    stack = [repo_path / "refs" / "heads", repo_path / "refs" / "tags"]
    while stack:
        directory = stack.pop()
        try:
            st = os.stat(directory)
            scan = list(os.scandir(directory))
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            # A reftable repository keeps a placeholder file there; its refs are in
            # reftable/tables.list, stat'ed above.
            entries.append(f"{directory} {st.st_ino} {st.st_size} {st.st_mtime_ns}")
            continue
        entries.append(f"{directory} {st.st_ino} {st.st_mtime_ns}")
        for entry in scan:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            else:
                est = entry.stat(follow_symlinks=False)
                entries.append(f"{entry.path} {est.st_ino} {est.st_size} {est.st_mtime_ns}")
        if len(entries) > _LS_REFS_MAX_STATE:
            return None
    # A ref file's name may hold any byte but NUL (os.scandir keeps the rest as surrogates).
    return hashlib.sha256("\n".join(entries).encode("utf-8", "surrogateescape")).digest()


def ls_refs(repo_path: Path, argv: list[str], env: dict[str, str], body: bytes) -> bytes | None:
    """upload-pack's answer to a v2 ls-refs request about HEAD, branches and tags, from the cache
    or from git (then cached); None for requests this does not cover."""
    if len(body) > LS_REFS_MAX_BODY or ls_refs_prefixes(body) is None:
        return None
    state = _ref_state(repo_path)
    key = hashlib.sha256(repr((str(repo_path), state, argv, sorted(env.items()), body)).encode()).digest()
    if state is not None and (answer := _ls_refs.get(key)) is not None:
        return answer
    try:
        answer = run_git(argv, env=env, input=body).stdout
    except GitError:
        return None  # let the streaming path run it, and the client see git's own error
    if state is not None and len(answer) <= _LS_REFS_MAX_ANSWER:
        if len(_ls_refs) >= _LS_REFS_MAX_ENTRIES:
            _ls_refs.clear()
        _ls_refs[key] = answer
    return answer
