"""A history shaped like a real project's, for the history generator: topic branches merged
into main, release branches that diverge and keep receiving fixes (one long-term branch for
years), a tag every few dozen commits (annotated releases, lightweight builds), and about as
many stale branches as tags. Deterministic for a seed, written by one `git fast-import`.

The plain generator (one straight line, an annotated tag every 500 commits) made the Work
page look faster than it is on a real history: 82,000 commits with 2,017 refs, half of them
tags, cost the cold page 483 ms where the plain 200,000 commits cost 267 ms.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from bench.harness.history import HistoryGenerator
from repos.hooks import refspace

SCRATCH = refspace.BENCH + "scratch"  # topic branches not kept; deleted after the import


@dataclass
class Shape:
    commits: int
    tags: int = 1_000  # all tags, about
    branches: int = 60  # canonical branches besides main, about (releases, then stale topics)
    releases: int = 40  # release branches (every tenth is a long-term one)
    topic_rate: float = 0.05  # a topic branch starts at this share of the steps
    release_rate: float = 0.04  # a fix lands on a maintained release at this share
    abandoned: float = 0.25  # kept topic branches never merged


@dataclass
class _Release:
    name: str
    tip: str
    index: int
    fixes: int = 0


@dataclass
class Written:
    merges: int = 0
    topics: int = 0
    annotated: int = 0
    lightweight: int = 0
    branches: list[str] = field(default_factory=list)
    releases: list[str] = field(default_factory=list)


def stream_shaped(gen: HistoryGenerator, out, shape: Shape) -> Written:
    """Write `shape.commits` commits (merges included) onto refs/heads/main and its branches."""
    rng = gen.rng
    c = shape.commits
    per_step = 1 + 3.5 * shape.topic_rate  # commits a step writes, on average
    topics_expected = c * shape.topic_rate / per_step
    keep_every = max(1, round(topics_expected / max(1, shape.branches - shape.releases)))
    fixes_expected = c * shape.release_rate / per_step
    patch_tags = int(shape.tags * 0.4)
    patch_every = max(1, round(fixes_expected / max(1, patch_tags)))
    build_every = max(1, round(c / max(1, shape.tags - shape.releases - patch_tags)))
    release_every = max(1, c // (shape.releases + 1))

    written = Written()
    mark = 0
    main = ""  # main's tip, as ":mark"
    recent: deque[str] = deque(maxlen=40)  # main's last commits: where topics fork
    releases: list[_Release] = []
    next_release = release_every
    next_build = build_every

    def commit(ref: str, parents: list[str]) -> tuple[str, str]:
        nonlocal mark
        mark += 1
        author = gen.commit(out, ref=ref, mark=mark, parents=parents)
        return f":{mark}", author

    def tag(name: str, target: str, author: str | None) -> None:
        if author is None:
            out.write(f"reset refs/tags/{name}\nfrom {target}\n\n".encode())
            written.lightweight += 1
            return
        msg = f"Release {name}\n".encode()
        out.write(
            f"tag {name}\nfrom {target}\ntagger {author} {gen.ts} +0000\ndata {len(msg)}\n".encode()
            + msg
            + b"\n"
        )
        written.annotated += 1

    def on_main(parents: list[str]) -> str:
        nonlocal main
        main, author = commit("refs/heads/main", parents)
        recent.append(main)
        return author

    on_main([])
    while gen.count < c:
        if gen.count >= next_release:
            next_release += release_every
            n = len(releases)
            name = f"{n // 10 + 1}.{n % 10}"
            releases.append(_Release(f"release/{name}", main, n))
            out.write(f"reset refs/heads/release/{name}\nfrom {main}\n\n".encode())
            written.releases.append(f"release/{name}")
            tag(f"v{name}.0", main, rng.choice(gen.authors))
        lts = [r for r in releases if r.index % 10 == 0][-1:]
        live = releases[-3:] + [r for r in lts if r not in releases[-3:]]
        r = rng.random()
        if r < shape.topic_rate:
            written.topics += 1
            kept = written.topics % keep_every == 0
            ref = f"refs/heads/topic/{written.topics}" if kept else SCRATCH
            tip = recent[-rng.randint(1, len(recent))]
            for _ in range(rng.choice((1, 1, 2, 2, 3, 4, 6, 9))):
                tip, _author = commit(ref, [tip])
            if kept:
                written.branches.append(ref.removeprefix("refs/heads/"))
            if not (kept and rng.random() < shape.abandoned):
                on_main([main, tip])
                written.merges += 1
        elif r < shape.topic_rate + shape.release_rate and live:
            rel = rng.choice(live)
            rel.tip, author = commit(f"refs/heads/{rel.name}", [rel.tip])
            rel.fixes += 1
            if rel.fixes % patch_every == 0:
                tag(f"v{rel.name.removeprefix('release/')}.{rel.fixes // patch_every}", rel.tip, author)
            if rel.index % 10 and rel.fixes % 20 == 0:  # fixes merged forward
                on_main([main, rel.tip])
                written.merges += 1
        else:
            on_main([main])
        if gen.count >= next_build:
            next_build += build_every
            tag(f"build/{gen.count}", main, None)
    return written
