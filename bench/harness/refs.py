"""Workspace refs by the thousand, written straight into a repository."""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from bench.harness.common import Git, MeasureError, SetupError
from repos.hooks import refspace


def ref_format(git: Git, repo: Path) -> str:
    """files or reftable. `rev-parse --show-ref-format` exists from git 2.45; older gits echo
    the option back, and can only have the files backend unless extensions.refStorage says so."""
    out = git.run("--git-dir", str(repo), "rev-parse", "--show-ref-format").strip()
    if out in ("files", "reftable"):
        return out
    try:
        return git.run("--git-dir", str(repo), "config", "--get", "extensions.refStorage").strip() or "files"
    except MeasureError:
        return "files"


def populate_workspaces(git: Git, repo: Path, *, users: int, per_user: int, batch: int = 10_000) -> dict:
    """users x per_user refs refs/users/uNNNNN/rK, written with update-ref --stdin (the
    repository's own config applies: a reflog per ref, as pushes would leave), then packed."""
    commits = git.run("--git-dir", str(repo), "rev-list", "--all").split()
    if not commits:
        raise SetupError(f"{repo} has no commits")
    width = max(5, len(str(users - 1)))
    lines = [
        f"create {refspace.WORKSPACES}u{u:0{width}d}/r{k} {commits[(u * per_user + k) % len(commits)]}\n"
        for u in range(users)
        for k in range(per_user)
    ]
    fmt_ = ref_format(git, repo)
    t0 = time.monotonic()
    for i in range(0, len(lines), batch):
        try:
            git.run(
                "--git-dir", str(repo), "update-ref", "--stdin", input="".join(lines[i : i + batch]).encode()
            )
        except MeasureError as exc:
            raise SetupError(f"writing workspace refs: {exc}") from None
    written = time.monotonic() - t0
    t0 = time.monotonic()
    # files: everything into packed-refs, loose refs pruned. reftable: compact the tables the
    # batches wrote into one (what auto-compaction converges to).
    args = ["pack-refs", "--all", "--prune"] if fmt_ == "files" else ["pack-refs"]
    try:
        git.run("--git-dir", str(repo), *args)
    except MeasureError as exc:
        raise SetupError(f"git {' '.join(args)}: {exc}") from None
    packed = time.monotonic() - t0
    count = len(
        git.run("--git-dir", str(repo), "for-each-ref", "--format=x", refspace.WORKSPACES).splitlines()
    )
    if count != len(lines):
        raise SetupError(f"expected {len(lines)} workspace refs in {repo}, found {count}")
    return {"ref_format": fmt_, "workspace_refs": count, "commits_pointed_at": min(len(commits), len(lines)),
            "write_s": round(written, 1), "pack_s": round(packed, 1), "pack_command": " ".join(args)}  # fmt: skip


def write_drafts(git: Git, repo: Path, *, heads: int, drafts: int, deepest: int, seed: int) -> dict:
    """heads x stacks of draft commits, written by one fast-import into `repo`: on main, and
    one head in twenty on a maintained release branch (one of the three updated last), when
    there are release branches."""

    def line(ref: str, count: int) -> list[tuple[str, str]]:
        rows = git.run(
            "--git-dir", str(repo), "log", "--first-parent", f"--max-count={count}", "--format=%H %ct", ref
        )
        return [tuple(row.split()) for row in rows.split("\n") if row]  # type: ignore[misc]

    main, dates = zip(*line("main", deepest), strict=True)
    releases = git.run(
        "--git-dir", str(repo), "for-each-ref", "--sort=-committerdate", "--count=3", "--format=%(refname)",
        "refs/heads/release/",
    ).split()  # fmt: skip
    release_bases = [(sha, int(when)) for ref in releases for sha, when in line(ref, 100)]
    rng = random.Random(seed)  # noqa: S311 - deterministic data, not security
    sizes = [1] * heads
    for _ in range(drafts - heads):
        sizes[rng.randrange(heads)] += 1
    now = int(time.time())
    out, mark, depths = [], 0, []
    for h in range(heads):
        r = rng.random()
        limit = 1_000 if r < 0.6 else 10_000 if r < 0.9 else deepest
        depth = rng.randrange(min(limit, len(main)))
        base, base_date = main[depth], int(dates[depth])
        if release_bases and h % 20 == 19:
            base, base_date = release_bases[rng.randrange(len(release_bases))]
        else:
            depths.append(depth)
        user = f"u{h % 400:04d}"
        ref = (
            refspace.nameless_ref(user, "main", f"{rng.getrandbits(48):012x}")
            if h % 3 == 0
            else refspace.workspace_ref(user, f"topic{h}")
        )
        # Never older than the base: git walks by date, and a draft dated before its parent
        # would make every walk go deeper than it does on a real repository.
        ts = max(now - rng.randrange(40 * 86400), base_date)
        for k in range(sizes[h]):
            mark += 1
            ts += rng.randrange(60, 3600)
            msg = f"{user}: work {h}.{k}\n".encode()
            stamp = f"{user} <{user}@example.invalid> {min(ts, now)} +0000"
            out.append(
                f"commit {ref}\nmark :{mark}\nauthor {stamp}\ncommitter {stamp}\ndata {len(msg)}\n".encode()
                + msg
            )
            if k == 0:
                out.append(f"from {base}\n".encode())
            data = f"{user} {h} {k}\n".encode()
            out.append(
                f"M 100644 inline drafts/{user}-{h}-{k}.txt\ndata {len(data)}\n".encode() + data + b"\n\n"
            )
    out.append(b"done\n")
    proc = subprocess.run(
        [shutil.which("git") or "git", "--git-dir", str(repo), "fast-import", "--quiet", "--done"],
        input=b"".join(out),
        capture_output=True,
        env=git.env,
        check=False,
    )
    if proc.returncode != 0:
        raise SetupError(f"fast-import of the drafts failed: {proc.stderr.decode(errors='replace')[-2000:]}")
    return {
        "heads": heads,
        "release_heads": heads - len(depths),
        "drafts": mark,
        "deepest_base": max(depths),
        "median_base_depth": statistics.median(depths),
    }
