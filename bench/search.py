"""Benchmark code search: index every file of the default branch of a large generated history,
then time a literal code search, on SQLite and (when DATABASE_URL points at PostgreSQL) on
PostgreSQL, with the index's size.

A benchmark, not a test: it prints figures and PASS/MISS, and exits 0 unless the setup failed.
Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.search                       # 200,000 generated commits
    .venv/bin/python -m bench.search --commits 20000       # a quicker look
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/hostsite_search \\
        .venv/bin/python -m bench.search --commits 20000   # SQLite and PostgreSQL

What it does, under one temporary directory:

1. Generates the history with bench.harness.history (`--commits`, default 200,000): what code
   search indexes is the default branch's files, which the generator grows as it goes.
2. Per engine: a fresh database (SQLite under the run's VAR_DIR; on PostgreSQL a database
   named after DATABASE_URL's with `_bench` appended, dropped and created), `migrate`, a
   repository bench/big whose refs are fetched from the generated one (no hooks run), then a
   child Django process that indexes it (search.indexing, as the Celery task does, to the
   end) and times searches through search.backend: the page's work for the first page of a
   literal code search (the count, capped, and the first 20 hits with their lines), median of
   --rounds after a warm-up, for a rare literal (a fragment of one line) and a common one.
3. Index size: SQLite: the pages of every search table and index (dbstat), FTS5's shadow
   tables included; PostgreSQL: pg_total_relation_size of every search table (its indexes and
   TOAST included).

Target (from the issue): a literal search at most 300 ms.
The machine may be shared and noisy: the figures are from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.harness import (
    BASE_DIR,
    PY,
    Git,
    SetupError,
    add_run_options,
    client_env,
    fmt,
    history,
    hostsite_env,
    manage,
    repo_create,
    run_benchmark,
    say,
    verdict,
)

TARGET_MS = 300.0

MEASURE_SCRIPT = r"""
import collections, json, statistics, sys, time
import django
django.setup()
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from repos.models import Repository
from search import backend, indexing
from search.models import CodeFile, CommitEntry
from search.query import parse

rounds = int(sys.argv[1])
repo = Repository.objects.select_related("owner").get(owner__username="bench", name="big")
t0 = time.perf_counter()
runs = 0
while True:
    outcome = indexing.index_update(repo=repo)
    runs += 1
    if not outcome.more:
        break
index_s = time.perf_counter() - t0
files = CodeFile.objects.filter(repository=repo).count()
content = sum(CodeFile.objects.filter(repository=repo).values_list("size", flat=True))
commits = CommitEntry.objects.filter(repository=repo).count()

with connection.cursor() as cursor:
    if connection.vendor == "sqlite":
        cursor.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'search%%'")
        size = int(cursor.fetchone()[0])
        cursor.execute(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'search_code%%' "
            "OR name LIKE 'search_fts_code%%'"
        )
        code_size = int(cursor.fetchone()[0])
    else:
        cursor.execute(
            "SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM pg_class "
            "WHERE relkind = 'r' AND relname LIKE 'search%%'"
        )
        size = int(cursor.fetchone()[0])
        cursor.execute("SELECT pg_total_relation_size('search_codefile')")
        code_size = int(cursor.fetchone()[0])

# A rare literal: the middle of one line of one file.
sample = CodeFile.objects.filter(repository=repo).order_by("path")[files // 2]
line = max(sample.content.split("\n")[:40], key=len).strip()
rare = line[len(line) // 3 : len(line) // 3 + 14].strip()
anon = AnonymousUser()
timings = {}
# A common literal: the most frequent word of four letters or more.
words = collections.Counter(
    w for row in CodeFile.objects.filter(repository=repo).values_list("content", flat=True)[:300]
    for w in row.split() if len(w) >= 4
)
common = words.most_common(1)[0][0]
for label, text in (("rare", rare), ("common", common)):
    query = parse(text)
    found = backend.count("code", query, anon)
    hits = backend.find("code", query, anon, 0, 20)  # warm-up
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        backend.count("code", query, anon)
        backend.find("code", query, anon, 0, 20)
        samples.append((time.perf_counter() - t) * 1000)
    timings[label] = {"text": text, "matches": found, "first_page": len(hits), "ms": statistics.median(samples),
                      "samples": samples}
print(json.dumps({"index_s": index_s, "runs": runs, "files": files, "content_bytes": content,
                  "commits": commits, "index_bytes": size, "code_index_bytes": code_size,
                  "timings": timings}))
"""


def _postgres_url(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        return None
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "_bench"))


def _fresh_postgres(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def _engine(label: str, tmp: Path, git: Git, master: Path, args, database_url: str | None) -> dict:
    var = tmp / f"var-{label}"
    env = hostsite_env(var, 8000)  # no server is started: the port is never bound
    if database_url:
        _fresh_postgres(database_url)
        env["DATABASE_URL"] = database_url
    say(f"{label}: migrate, create bench/big, fetch the history")
    manage(env, "migrate", "--no-input")
    manage(env, "user", "create", "bench")
    path = repo_create(env, "bench/big")
    git.run("-C", str(path), "fetch", "--quiet", str(master), "+refs/heads/*:refs/heads/*")
    say(f"{label}: index and search")
    proc = subprocess.run(
        [PY, "-c", MEASURE_SCRIPT, str(args.rounds)],
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=False,
        timeout=24 * 3600,
    )
    if proc.returncode != 0:
        raise SetupError(f"{label}: the measurement failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(args, tmp: Path, procs) -> dict:
    git = Git(client_env(tmp / "home"), [])
    master = tmp / "master.git"
    say(f"generating {args.commits:,} commits")
    history.generate(master, git, history.HistoryGenerator(args.seed), args.commits)
    engines = {"sqlite": _engine("sqlite", tmp, git, master, args, None)}
    pg = _postgres_url(os.environ.get("DATABASE_URL", ""))
    if pg:
        engines["postgresql"] = _engine("postgresql", tmp, git, master, args, pg)
    _print(args, engines)
    return {"commits": args.commits, "engines": engines}


def _print(args, engines: dict) -> None:
    mib = 1024 * 1024
    print()
    print(f"code search over the default branch of a {args.commits:,}-commit generated history")
    for name, r in engines.items():
        print(
            f"  {name}: {r['files']:,} files, {r['content_bytes'] / mib:.1f} MiB of text, "
            f"{r['commits']:,} commits indexed in {r['index_s']:.1f} s ({r['runs']} runs); "
            f"index {r['index_bytes'] / mib:.1f} MiB in all, code {r['code_index_bytes'] / mib:.1f} MiB "
            f"({r['code_index_bytes'] / max(1, r['content_bytes']):.1f}x the text)"
        )
    names = list(engines)
    header = f"{'search (count + first 20 hits)':<40}" + "".join(f"{n:>14}" for n in names)
    if len(names) == 2:
        header += f"{'pg/sqlite':>11}"
    print()
    print(header + f"{'target':>9}  verdict")
    for label in ("rare", "common"):
        times = [engines[n]["timings"][label]["ms"] for n in names]
        first = engines[names[0]]["timings"][label]
        title = f"{label} literal {first['text']!r} ({first['matches']} files)"
        row = f"{title[:40]:<40}" + "".join(f"{fmt(t):>11} ms" for t in times)
        if len(names) == 2:
            row += f"{fmt(times[1] / times[0] if times[0] else None, '.2f'):>10}x"
        ok = all(t <= TARGET_MS for t in times)
        print(row + f"{TARGET_MS:>6.0f} ms  {verdict(ok)}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=200_000, help="generated history length (default 200,000)")
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--rounds", type=int, default=5, help="timed searches per literal (median reported)")
    add_run_options(p)
    args = p.parse_args()
    return run_benchmark("bench/search.py", "hostsite-bench-search-", args, run)


if __name__ == "__main__":
    sys.exit(main())
