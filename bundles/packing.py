"""Writing and verifying bundle files. No database here: paths in, paths out.

We write the v2 bundle ourselves (header, then `git pack-objects --stdout`) instead of running
`git bundle create`, because `git bundle create` always reuses the deltas and zlib streams of
whatever packs the repository happens to have. A base bundle wants a fresh delta search
(`--no-reuse-delta`: 126.5 MB instead of 309.7 MB for git/git, shared/DESIGN.md), and the zstd
flavor needs every object stored uncompressed (`pack.compression=0` only applies to objects
pack-objects recompresses, hence `--no-reuse-object`). Delta window and depth are git's
defaults (10 / 50): `--window=250` as in `gc --aggressive` gained little and cost many times
the CPU.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import zstandard
from django.conf import settings

from gitcore.git import GitError, run_git, stream_git
from gitcore.gittools import text_ref_map
from repos.hooks import refspace

BUNDLE_SIGNATURE = b"# v2 git bundle\n"
# curl (which decodes Content-Encoding: zstd for git) keeps zstd's default decoder limit of a
# 2**27-byte window; a larger window would make every client fail to decode the bundle.
ZSTD_WINDOW_LOG = 27


@dataclass(frozen=True)
class BundleSpec:
    """What one bundle contains: refs it carries, commits the client must already have, and
    the objects to leave out (everything reachable from the previous bundles' tips)."""

    refs: Mapping[str, str]
    prerequisites: Sequence[str] = ()
    exclude: Sequence[str] = ()

    @property
    def incremental(self) -> bool:
        return bool(self.exclude)


def canonical_refs(repo_path: Path) -> dict[str, str]:
    """refs/heads/* and refs/tags/* only: workspaces (refs/users/*) never go into a bundle."""
    return text_ref_map(repo_path, "refs/heads/", "refs/tags/")


# Annotated tags also go into the header as branches under this name. A client unbundling
# from a bundle URI (git 2.39 and 2.47 alike) writes refs/bundles/* for the header's
# refs/heads/* only; a tag object no local ref points to is not "complete", so the client then
# asks the origin for every annotated tag again: a negotiation and a pack of tag objects, two
# upload-pack requests, ~60 ms of the origin's CPU per clone (bench/bundles.py). With a
# refs/bundles/bundle-tags/<tag> ref to each, a clone from fresh bundles fetches nothing.
TAG_ANCHORS = refspace.BUNDLE_TAG_ANCHORS


def header_refs(repo_path: Path, refs: Mapping[str, str]) -> dict[str, str]:
    """The refs a bundle's header lists: the spec's refs, plus a branch under TAG_ANCHORS for
    each annotated tag (the same object; the pack is unchanged). None are added if a real
    branch would collide with them."""
    anchor_root = TAG_ANCHORS.rstrip("/")
    if any(ref == anchor_root or ref.startswith(TAG_ANCHORS) for ref in refs):
        return dict(refs)
    tags = {ref: oid for ref, oid in refs.items() if ref.startswith("refs/tags/")}
    if not tags:
        return dict(refs)
    oids = sorted(set(tags.values()))
    out = run_git(
        ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        repo=repo_path,
        input="".join(f"{oid}\n" for oid in oids).encode(),
    ).text
    annotated = {oid for oid, _, kind in (line.partition(" ") for line in out.splitlines()) if kind == "tag"}
    anchors = {
        TAG_ANCHORS + ref.removeprefix("refs/tags/"): oid for ref, oid in tags.items() if oid in annotated
    }
    return {**refs, **anchors}


def boundary(repo_path: Path, tips: Sequence[str], exclude: Sequence[str]) -> tuple[list[str], int]:
    """(prerequisite commits, number of new commits) of tips --not exclude."""
    args = ["rev-list", "--boundary", *tips, "--not", *exclude]
    lines = run_git(args, repo=repo_path, timeout=settings.BUNDLE_GIT_TIMEOUT).text.splitlines()
    prerequisites = sorted({line[1:] for line in lines if line.startswith("-")})
    return prerequisites, sum(1 for line in lines if line and not line.startswith("-"))


def count_commits(repo_path: Path, tips: Sequence[str]) -> int:
    return int(
        run_git(["rev-list", "--count", *tips], repo=repo_path, timeout=settings.BUNDLE_GIT_TIMEOUT).text
    )


def write_bundle(repo_path: Path, out: Path, spec: BundleSpec, *, uncompressed: bool) -> None:
    """A v2 bundle at `out`: header lines, a blank line, then the pack streamed from git."""
    # pack.allowPackReuse=false: with a reachability bitmap (maintenance writes one), git
    # otherwise sends the existing pack verbatim and ignores --no-reuse-delta/--no-reuse-object,
    # so the zstd flavor was zstd over zlib data (0.95x the standard size instead of 0.45x,
    # bench/bundles.py) and the base bundle never got a fresh delta search.
    args = ["-c", "pack.allowPackReuse=false"]
    if uncompressed:
        args += ["-c", "pack.compression=0"]
    args += ["pack-objects", "--stdout", "--revs", "--delta-base-offset", "--quiet"]
    if spec.incremental:
        # Deltas against objects the client already has; `git bundle unbundle` runs
        # index-pack --fix-thin, as for git's own incremental bundles.
        args.append("--thin")
    args.append("--no-reuse-object" if uncompressed else "--no-reuse-delta")
    stdin = "".join(f"{oid}\n" for oid in sorted(set(spec.refs.values())))
    stdin += "".join(f"^{oid}\n" for oid in spec.exclude)
    listed = header_refs(repo_path, spec.refs)
    with open(out, "wb") as fh, tempfile.TemporaryFile() as err:
        fh.write(BUNDLE_SIGNATURE)
        fh.writelines(f"-{oid}\n".encode() for oid in spec.prerequisites)
        fh.writelines(f"{oid} {ref}\n".encode() for ref, oid in sorted(listed.items()))
        fh.write(b"\n")
        fh.flush()
        with stream_git(
            args,
            repo=repo_path,
            stdin=subprocess.PIPE,
            stdout=fh,
            stderr=err,
            timeout=settings.BUNDLE_GIT_TIMEOUT,
        ) as git:
            git.stdin.write(stdin.encode())
            git.stdin.close()
            git.wait()
            err.seek(0)
            git.check(err.read()[-4000:])  # GitTimeout / GitError
        fh.flush()


def compress_zstd(src: Path, dst: Path) -> None:
    """The whole bundle file through zstd, file to file, multi-threaded, long-distance matching."""
    params = zstandard.ZstdCompressionParameters.from_level(
        settings.BUNDLE_ZSTD_LEVEL, window_log=ZSTD_WINDOW_LOG, enable_ldm=True, threads=-1
    )
    compressor = zstandard.ZstdCompressor(compression_params=params)
    with open(src, "rb") as ifh, open(dst, "wb") as ofh:
        compressor.copy_stream(ifh, ofh, size=src.stat().st_size)


def decompress_zstd(src: Path, dst: Path) -> None:
    decompressor = zstandard.ZstdDecompressor(max_window_size=2**ZSTD_WINDOW_LOG)
    with open(src, "rb") as ifh, open(dst, "wb") as ofh:
        decompressor.copy_stream(ifh, ofh)


class VerificationFailed(Exception):
    pass


def verify_bundle(path: Path, spec: BundleSpec, *, source_repo: Path) -> None:
    """Apply the bundle to a fresh, empty bare repository as a client would.

    `git bundle verify` alone only reads the header and checks prerequisites; unbundling runs
    index-pack, which checks the pack's checksum and every object's hash, and the rev-list
    then proves every object reachable from the tips arrived. An incremental bundle's
    prerequisites come from the source repository through alternates (read-only).
    """
    work = Path(tempfile.mkdtemp(prefix="verify-", dir=path.parent))
    try:
        run_git(["init", "--bare", "--quiet", str(work)])
        if spec.incremental:
            (work / "objects" / "info" / "alternates").write_text(f"{(source_repo / 'objects').resolve()}\n")
        timeout = settings.BUNDLE_GIT_TIMEOUT
        try:
            run_git(["bundle", "verify", "--quiet", str(path)], repo=work, timeout=timeout)
            listed = run_git(["bundle", "unbundle", str(path)], repo=work, timeout=timeout).text
            run_git(
                ["rev-list", "--objects", "--quiet", *sorted(set(spec.refs.values()))],
                repo=work,
                timeout=timeout,
            )
        except GitError as exc:
            raise VerificationFailed(str(exc)) from exc
        got = {ref: oid for oid, ref in (line.split(" ", 1) for line in listed.splitlines() if line)}
        expected = header_refs(source_repo, spec.refs)
        if got != expected:
            raise VerificationFailed(f"bundle lists {len(got)} refs, expected {len(expected)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
