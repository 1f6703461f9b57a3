"""The cache rate limits count in: concurrent processes lose no count (what gunicorn's workers
do to it), on the embedded default (diskcache) and on Redis, and the system checks refuse a
cache that cannot count."""

from __future__ import annotations

import multiprocessing
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core import checks
from django.core.cache import caches
from django.test import RequestFactory
from django_ratelimit.core import get_usage

from hostsite.ratelimit_settings import ratelimit_cache

PROCESSES, EACH = 6, 200
REDIS_URL = "redis://127.0.0.1:6379/15"


def _count_in_child(value: str, start, results) -> None:
    """Runs in a forked process: its cache connection is its own, opened on first use."""
    request = RequestFactory().get("/")
    start.wait()
    seen = []
    for _ in range(EACH):
        usage = get_usage(request, group="race", key=lambda _g, _r: value, rate=(10**9, 3600), increment=True)
        seen.append(usage["count"])
    results.put(seen)


def _race() -> list[int]:
    context = multiprocessing.get_context("fork")
    value = uuid.uuid4().hex
    start, results = context.Barrier(PROCESSES), context.Queue()
    children = [
        context.Process(target=_count_in_child, args=(value, start, results)) for _ in range(PROCESSES)
    ]
    for child in children:
        child.start()
    counts = sorted(count for _ in children for count in results.get(timeout=120))
    for child in children:
        child.join(timeout=30)
        assert child.exitcode == 0
    return counts


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_concurrent_processes_lose_no_count(kind, settings, tmp_path):
    if kind == "redis" and not _redis_up():
        pytest.skip("no Redis on 127.0.0.1:6379")
    # Set here, before the fork: the children open their connections to it themselves.
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": ratelimit_cache(REDIS_URL if kind == "redis" else "", tmp_path),
    }
    # Every increment got a count of its own, and together they are all there.
    assert _race() == list(range(1, PROCESSES * EACH + 1))


def test_the_configured_cache_is_one_that_counts():
    backend = settings.CACHES[settings.RATELIMIT_USE_CACHE]["BACKEND"]
    assert backend == ratelimit_cache(settings.CACHE_URL, Path(settings.VAR_DIR))["BACKEND"]
    assert [m for m in checks.run_checks(tags=[checks.Tags.caches]) if not m.is_silenced()] == []
    assert caches[settings.RATELIMIT_USE_CACHE].add(f"rl:{uuid.uuid4().hex}", 0, 5)


@pytest.mark.parametrize(
    "backend",
    ["django.core.cache.backends.filebased.FileBasedCache", "django.core.cache.backends.locmem.LocMemCache"],
)
def test_a_cache_that_cannot_count_fails_the_checks(settings, backend, tmp_path):
    settings.CACHES = {**settings.CACHES, "ratelimit": {"BACKEND": backend, "LOCATION": str(tmp_path)}}
    found = {message.id for message in checks.run_checks(tags=[checks.Tags.caches])}
    # django-ratelimit's own refusal, and ours, which also covers caches it only warns about.
    assert {"django_ratelimit.E003", "repos.E001"} <= found
