"""Bench repositories: a generated one with seeded random blobs (a large pack), the same packs
installed in several copies, and small new commits to push."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

from bench.harness.common import GIT, MIB, Git, SetupError


def generate_repository(path: Path, git: Git, *, size_mb: int, commits: int, seed: int) -> None:
    """A deterministic bare repository: text files edited over `commits` commits, plus seeded
    random (incompressible) blobs adding up to about `size_mb` MiB, written with fast-import."""
    rng = random.Random(seed)  # noqa: S311 - deterministic data, not security
    git.run("init", "--bare", "--quiet", "--initial-branch=main", str(path))
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(3000)]

    def line() -> str:
        return " ".join(rng.choices(words, k=rng.randint(3, 12))) + "\n"

    files: dict[str, list[str]] = {}
    for i in range(200):
        files[f"src/mod{i % 12:02d}/file{i:03d}.txt"] = [line() for _ in range(rng.randint(60, 180))]
    blob_count = max(1, commits // 3)
    blob_size = size_mb * MIB // blob_count

    proc = subprocess.Popen(
        [GIT, "-C", str(path), "fast-import", "--quiet", "--done"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=git.env,
    )
    out = proc.stdin
    try:
        blobs = 0
        for n in range(commits):
            if n == 0:
                changed = list(files)
            else:
                changed = rng.sample(sorted(files), rng.randint(2, 6))
                for name in changed:
                    lines = files[name]
                    for _ in range(rng.randint(1, 8)):
                        op = rng.random()
                        pos = rng.randrange(len(lines))
                        if op < 0.5:
                            lines[pos] = line()
                        elif op < 0.8 or len(lines) < 20:
                            lines.insert(pos, line())
                        else:
                            del lines[pos]
                if n % 25 == 0:
                    name = f"src/mod{rng.randrange(12):02d}/new{n:04d}.txt"
                    files[name] = [line() for _ in range(rng.randint(20, 80))]
                    changed.append(name)
            ts = 1_600_000_000 + n * 3600
            message = f"Change {n}: edit {len(changed)} files\n".encode()
            out.write(
                f"commit refs/heads/main\nmark :{n + 1}\n"
                f"author Bench Generator <bench@example.invalid> {ts} +0000\n"
                f"committer Bench Generator <bench@example.invalid> {ts} +0000\n"
                f"data {len(message)}\n".encode()
                + message
            )
            for name in changed:
                data = "".join(files[name]).encode()
                out.write(f"M 100644 inline {name}\ndata {len(data)}\n".encode() + data + b"\n")
            if n % 3 == 2 and blobs < blob_count:
                data = rng.randbytes(blob_size)
                out.write(f"M 100644 inline assets/blob{blobs:04d}.bin\ndata {len(data)}\n".encode())
                out.write(data + b"\n")
                blobs += 1
            out.write(b"\n")
            if n % 50 == 49:
                out.write(f"reset refs/tags/v0.{n // 50}\nfrom :{n + 1}\n\n".encode())
        out.write(b"done\n")
        out.close()
    except BrokenPipeError:
        pass
    err = proc.stderr.read().decode(errors="replace")
    if proc.wait() != 0:
        raise SetupError(f"git fast-import failed: {err.strip()[-2000:]}")


def pack_files(repo: Path) -> list[Path]:
    return sorted((repo / "objects" / "pack").glob("pack-*"))


def pack_bytes(repo: Path) -> int:
    return sum(p.stat().st_size for p in (repo / "objects" / "pack").glob("*.pack"))


def refs_of(git: Git, repo: Path) -> str:
    return git.run("--git-dir", str(repo), "for-each-ref", "--format=%(objectname) %(refname)")


def install_packs(master: Path, target: Path) -> None:
    """Replace target's objects with master's pack files and commit-graph (same refs, so the
    same objects): every server then serves byte-identical packs."""
    objects = target / "objects"
    for p in (objects / "pack").iterdir():
        p.unlink()
    for d in objects.iterdir():
        if len(d.name) == 2 and d.is_dir():
            shutil.rmtree(d)
    for name in ("commit-graph", "commit-graphs"):
        p = objects / "info" / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    for p in pack_files(master):
        shutil.copy2(p, objects / "pack" / p.name)
    graph = master / "objects" / "info" / "commit-graph"
    if graph.exists():
        shutil.copy2(graph, objects / "info" / "commit-graph")


class Pusher:
    """Makes one small new commit on top of the default branch for every push."""

    def __init__(self, git: Git, work: Path):
        self.git = git
        self.work = work
        gd = ("--git-dir", str(work))
        self.base = git.run(*gd, "rev-parse", "HEAD^{commit}").strip()
        self.base_tree = git.run(*gd, "ls-tree", self.base)

    def commit(self, name: str) -> str:
        gd = ("--git-dir", str(self.work))
        blob = self.git.run(
            *gd, "hash-object", "-w", "--stdin", input=f"bench push {name}\n".encode()
        ).strip()
        tree = self.git.run(
            *gd, "mktree", input=(self.base_tree + f"100644 blob {blob}\t{name}.txt\n").encode()
        )
        return self.git.run(
            *gd, "commit-tree", tree.strip(), "-p", self.base, "-m", f"bench push {name}"
        ).strip()

    def push(self, url: str, name: str) -> float:
        """Push one new commit to `url` as a new branch, timed in ms."""
        commit = self.commit(name)
        ref = f"refs/heads/{name}"
        gd = ("--git-dir", str(self.work))
        ms = 1000 * self.git.timed(*gd, "push", "--quiet", url, f"{commit}:{ref}")
        # Untimed: delete the branch again, so the next no-op fetch really is one.
        self.git.run(*gd, "push", "--quiet", url, f":{ref}")
        return ms
