"""Settings of the platform's own git work on repositories, kept beside hostsite.settings, which
imports them: maintenance and repacks (repos.maintenance, docs/packing.md), imports
(sources.importing) and pull mirrors (sources.mirrors)."""

from __future__ import annotations

from datetime import timedelta

from hostsite.env import env_bool, env_int

# What hostsite.settings takes from here.
__all__ = [
    "IMPORT_ALLOW_PRIVATE_SOURCES",
    "IMPORT_MAX_REFS",
    "IMPORT_MAX_SIZE",
    "IMPORT_PROGRESS_INTERVAL",
    "MAINTENANCE_INTERVAL",
    "MAINTENANCE_PUSH_THRESHOLD",
    "MAINTENANCE_STALE_CLAIM",
    "MIRROR_INTERVAL_MINUTES",
    "MIRROR_MAX_BACKOFF",
    "MIRROR_MIN_INTERVAL_MINUTES",
    "MIRROR_STALE_CLAIM",
    "REPACK_DEPTH",
    "REPACK_FRESH_AFTER_OBJECTS",
    "REPACK_FRESH_GROWTH",
    "REPACK_WINDOW",
]

# Repository maintenance (git repack + commit-graph) replaces git's automatic gc.
MAINTENANCE_INTERVAL = timedelta(hours=env_int("MAINTENANCE_INTERVAL_HOURS", 24, minimum=1))
# A maintenance run recorded for longer than this was killed: the scheduler queues it again.
MAINTENANCE_STALE_CLAIM = timedelta(hours=2)
# Pushes between maintenance runs: each push adds a pack; git's own gc.autoPackLimit is 50.
MAINTENANCE_PUSH_THRESHOLD = env_int("MAINTENANCE_PUSH_THRESHOLD", 50, minimum=1)

# A repack with a fresh delta search (`repack -a -d -f`) after an import, after a mirror sync that
# brought at least REPACK_FRESH_AFTER_OBJECTS objects, and in maintenance when the pack's bytes
# per object grew past REPACK_FRESH_GROWTH_PERCENT of what the last fresh repack left
# (repos.maintenance). Window and depth come from bench/packing.py (docs/packing.md).
REPACK_WINDOW = env_int("REPACK_WINDOW", 50, minimum=1, maximum=1000)
REPACK_DEPTH = env_int("REPACK_DEPTH", 50, minimum=1, maximum=4095)
REPACK_FRESH_AFTER_OBJECTS = env_int("REPACK_FRESH_AFTER_OBJECTS", 10000, minimum=1)
REPACK_FRESH_GROWTH = env_int("REPACK_FRESH_GROWTH_PERCENT", 150, minimum=101) / 100

# --- imports and mirrors ---
# Imports requested on the web or through the API (sources.importing): caps, and whether sources
# on private, loopback or link-local addresses may be fetched (off: the SSRF guard webhooks use).
IMPORT_MAX_SIZE = env_int("IMPORT_MAX_SIZE_MB", 4096, minimum=1) * 1024 * 1024
IMPORT_MAX_REFS = env_int("IMPORT_MAX_REFS", 200000, minimum=1)
IMPORT_ALLOW_PRIVATE_SOURCES = env_bool("IMPORT_ALLOW_PRIVATE_SOURCES", False)
# How often a running import writes its progress (and checks for a cancel).
IMPORT_PROGRESS_INTERVAL = env_int("IMPORT_PROGRESS_INTERVAL_MS", 1000, minimum=10) / 1000
# Pull mirrors (sources.mirrors): the default interval of a new mirror, the shortest one a
# repository may choose, and the longest wait after repeated failures (doubling each time).
MIRROR_INTERVAL_MINUTES = env_int("MIRROR_INTERVAL_MINUTES", 60, minimum=1)
MIRROR_MIN_INTERVAL_MINUTES = env_int("MIRROR_MIN_INTERVAL_MINUTES", 5, minimum=1)
MIRROR_MAX_BACKOFF = timedelta(hours=env_int("MIRROR_MAX_BACKOFF_HOURS", 24, minimum=1))
MIRROR_STALE_CLAIM = timedelta(hours=2)
