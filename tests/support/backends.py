"""Which database and broker a `make test` run uses, said in one line, then the command runs.

`python -m tests.support.backends <command...>` decides, prints the line and execs the command
with the choice in its environment. PostgreSQL and Redis are used whenever both answer on
localhost (PostgreSQL with trust auth), so a developer's run covers what only they exercise (the
advisory locks, replication) instead of skipping it. Variables the developer set, even to the
empty string (`DATABASE_URL=` is how `.ci/run` asks for the embedded defaults), are never
overridden and nothing is probed.

Two checkouts on one machine share the servers but nothing on them: the database name and the
broker's key prefix are derived from the checkout's path (pytest-django then names each xdist
worker's test database after it: `test_hostsite_<hash>_gw0`). The Celery queues are random per
session already and the caches are files under the checkout's `var/`.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
POSTGRES = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)
# Each probe is a local connection: a server that does not answer within this is not there.
PROBE_SECONDS = 2
# Variables that, set at all, mean the developer chose the backends.
CHOSEN = ("DATABASE_URL", "CELERY_BROKER_URL")


@dataclass(frozen=True)
class Choice:
    line: str
    env: dict[str, str] = field(default_factory=dict)


def checkout_tag(checkout: Path = CHECKOUT) -> str:
    return hashlib.sha256(str(checkout).encode()).hexdigest()[:8]


def postgres_refusal() -> str | None:
    """Why PostgreSQL cannot be used with trust auth as `postgres`, or None if it can."""
    import psycopg

    host, port = POSTGRES
    try:
        with psycopg.connect(
            host=host, port=port, user="postgres", dbname="postgres", connect_timeout=PROBE_SECONDS
        ):
            return None
    except psycopg.Error as exc:
        return f"PostgreSQL at {host}:{port}: {str(exc).strip().splitlines()[0]}"


def redis_refusal() -> str | None:
    import redis

    host, port = REDIS
    try:
        redis.Redis(host=host, port=port, socket_connect_timeout=PROBE_SECONDS).ping()
        return None
    except redis.RedisError as exc:
        return f"Redis at {host}:{port}: {exc}"


def describe(url: str) -> str:
    if url.startswith(("postgres://", "postgresql://")):
        return "PostgreSQL"
    if url.startswith(("redis://", "rediss://")):
        return "Redis"
    return url.split(":", 1)[0] if url else "embedded"


def choose(environ: dict[str, str], *, probe=None, checkout: Path = CHECKOUT) -> Choice:
    """The backends for a run with this environment. `probe` answers why the local servers
    cannot be used (None: they can); it is only called when the developer chose nothing."""
    chosen = [name for name in CHOSEN if name in environ]
    if chosen:
        database = describe(environ.get("DATABASE_URL", ""))
        broker = describe(environ.get("CELERY_BROKER_URL", ""))
        return Choice(f"backends: database {database}, broker {broker}, as set by {' and '.join(chosen)}")
    refusal = (probe or local_refusal)()
    if refusal:
        return Choice(f"backends: embedded defaults (SQLite, filesystem broker): {refusal}")
    tag = checkout_tag(checkout)
    host, port = POSTGRES
    redis_host, redis_port = REDIS
    env = {
        "DATABASE_URL": f"postgres://postgres@{host}:{port}/hostsite_{tag}",
        "CELERY_BROKER_URL": f"redis://{redis_host}:{redis_port}/0",
        "CELERY_KEY_PREFIX": f"hostsite-{tag}:",
    }
    return Choice(
        f"backends: PostgreSQL (database hostsite_{tag}) and Redis (keys hostsite-{tag}:*), found "
        "on localhost; DATABASE_URL= CELERY_BROKER_URL= runs on the embedded defaults",
        env,
    )


def local_refusal() -> str | None:
    return postgres_refusal() or redis_refusal()


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m tests.support.backends <command> [args...]")
    choice = choose(dict(os.environ))
    print(choice.line, flush=True)
    # Replaced by the command, so make sees its exit status and Ctrl-C reaches it directly.
    os.execvpe(argv[0], argv, {**os.environ, **choice.env})  # noqa: S606 - argv as given by make


if __name__ == "__main__":
    main(sys.argv[1:])
