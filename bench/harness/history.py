"""A deterministic history generator: source-like text files edited a few lines per commit,
written with `git fast-import`, whose state carries over so a later stream continues it."""

from __future__ import annotations

import itertools
import random
import subprocess
import threading
from pathlib import Path

from bench.harness.common import GIT, Git, MeasureError, SetupError


class HistoryGenerator:
    """A deterministic history of text files, written as a `git fast-import` stream.

    Files are lines of words from a fixed vocabulary; every commit edits a few lines of one to
    four files (occasionally adding a file), so most blobs are small deltas of their previous
    version, as in a source repository. State is kept between calls, so a later stream (the
    "day behind" commits) continues the same files."""

    def __init__(self, seed: int, *, prefix: str = "", initial_files: int = 360):
        self.rng = random.Random(seed)  # noqa: S311 - deterministic data, not security
        rng = self.rng
        letters = "abcdefghijklmnopqrstuvwxyz_"
        vocab = ["".join(rng.choices(letters, k=rng.randint(2, 11))) for _ in range(6000)]
        vocab += ["def", "return", "if", "else", "for", "in", "self", "None", "import", "class", "=", "==",
                  "(", ")", ":", "{", "}", "[", "]", "+", "-", "0", "1", "True", "False"]  # fmt: skip
        # Zipf-like word frequencies, as identifiers have.
        cum = list(itertools.accumulate(1.0 / (i + 1) ** 0.9 for i in range(len(vocab))))

        def line() -> str:
            indent = "    " * rng.choice((0, 1, 1, 2, 2, 2, 3))
            return indent + " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(2, 12))) + "\n"

        self.pool = [line() for _ in range(150_000)]
        self.authors = [
            f"{rng.choice(vocab).title()} {rng.choice(vocab).title()} <dev{i}@example.invalid>"
            for i in range(60)
        ]
        self.prefix = prefix
        self.files: dict[str, list[str]] = {}
        self.pending_initial = True
        for i in range(initial_files):
            self.files[self._name(i)] = [self._line() for _ in range(rng.randint(20, 140))]
        self.names: list[str] = []  # sorted(self.files), kept
        self.count = 0  # commits written so far
        self.ts = 1_500_000_000

    def _name(self, i: int) -> str:
        return f"{self.prefix}src/pkg{i % 24:02d}/module{i:04d}.py"

    def _line(self) -> str:
        return self.pool[self.rng.randrange(len(self.pool))]

    def _edit(self, lines: list[str]) -> None:
        rng = self.rng
        for _ in range(rng.choice((1, 1, 2, 2, 3, 4, 6))):
            pos = rng.randrange(len(lines))
            op = rng.random()
            if op < 0.45:
                lines[pos] = self._line()
            elif op < 0.8 or len(lines) < 20:
                lines.insert(pos, self._line())
            else:
                del lines[pos]

    def stream(self, out, commits: int, *, ref: str, parent: str | None = None, tags: bool = True,
               seconds_between: tuple[int, int] = (300, 7200)) -> None:  # fmt: skip
        for k in range(commits):
            parents = [parent] if k == 0 and parent else []
            author = self.commit(out, ref=ref, mark=k + 1, parents=parents, seconds_between=seconds_between)
            if tags and self.count % 500 == 0:
                tag = f"v{self.count // 5000}.{self.count // 500 % 10}.0"
                msg = f"Release {tag}\n".encode()
                out.write(f"tag {tag}\nfrom :{k + 1}\ntagger {author} {self.ts} +0000\n"
                          f"data {len(msg)}\n".encode() + msg + b"\n")  # fmt: skip

    def commit(self, out, *, ref: str, mark: int, parents: list[str],
               seconds_between: tuple[int, int] = (300, 7200)) -> str:  # fmt: skip
        """One commit editing a few files: `parents` (marks ":N" or ids) are its first parent
        and the ones it merges (none: the ref's previous commit). Returns its author."""
        rng = self.rng
        if len(self.names) != len(self.files):  # a file was added
            self.names = sorted(self.files)
        names = self.names
        if self.pending_initial:
            changed = names
            self.pending_initial = False
        else:
            changed = rng.sample(names, rng.choice((1, 1, 1, 2, 2, 3, 4)))
            for name in changed:
                self._edit(self.files[name])
            if self.count % 150 == 0:
                name = self._name(len(self.files))
                self.files[name] = [self._line() for _ in range(rng.randint(20, 120))]
                changed = [*changed, name]
        self.ts += rng.randint(*seconds_between)
        author = rng.choice(self.authors)
        subject = self._line().strip()[:68] or "update"
        body = "".join(self._line().strip() + "\n" for _ in range(rng.choice((0, 0, 1, 2, 3))))
        message = (f"{subject}\n\n{body}" if body else f"{subject}\n").encode()
        head = f"commit {ref}\nmark :{mark}\n"
        head += f"author {author} {self.ts} +0000\ncommitter {author} {self.ts} +0000\n"
        head += f"data {len(message)}\n"
        out.write(head.encode() + message)
        for i, parent in enumerate(parents):
            out.write(f"{'merge' if i else 'from'} {parent}\n".encode())
        for name in changed:
            data = "".join(self.files[name]).encode()
            out.write(f"M 100644 inline {name}\ndata {len(data)}\n".encode() + data + b"\n")
        out.write(b"\n")
        self.count += 1
        return author


def fast_import(repo: Path, git: Git, writer) -> None:
    proc = subprocess.Popen(
        [GIT, "-C", str(repo), "fast-import", "--quiet", "--done"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=git.env,
    )
    err_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    try:
        writer(proc.stdin)
        proc.stdin.write(b"done\n")
        proc.stdin.close()
    except BrokenPipeError:
        pass
    code = proc.wait()
    reader.join()
    if code != 0:
        err = b"".join(err_chunks).decode(errors="replace")
        raise SetupError(f"git fast-import failed: {err.strip()[-2000:]}")


def generate(master: Path, git: Git, gen: HistoryGenerator, commits: int) -> None:
    git.run("init", "--bare", "--quiet", "--initial-branch=main", str(master))

    def writer(out):
        buffered = Buffered(out)
        gen.stream(buffered, commits, ref="refs/heads/main")
        buffered.flush()

    fast_import(master, git, writer)


class Buffered:
    """Fewer, larger writes to the fast-import pipe."""

    def __init__(self, out, limit: int = 1 << 20):
        self.out, self.limit, self.parts, self.size = out, limit, [], 0

    def write(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        if self.size >= self.limit:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.out.write(b"".join(self.parts))
            self.parts, self.size = [], 0


def default_branch(git: Git, repo: Path) -> str:
    try:
        return git.run("--git-dir", str(repo), "symbolic-ref", "HEAD").strip()
    except MeasureError:
        return "refs/heads/main"
