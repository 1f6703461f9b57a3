"""Browsing's settings, kept beside hostsite.settings, which imports them: what a page renders
before it offers the rest (gitcore/gitdiff.py, repos/views/), blame and search limits, documents
and the image proxy (render/imageproxy.py, repos/imagefetch.py)."""

from __future__ import annotations

import ipaddress

from django.core.exceptions import ImproperlyConfigured

from hostsite.env import env_bool, env_int, env_list

# What hostsite.settings takes from here.
__all__ = [
    "BLAME_TIMEOUT",
    "BLOB_MAX_DISPLAY_BYTES",
    "DIFF_FULL_MAX_BYTES",
    "DIFF_FULL_MAX_FILES",
    "DIFF_FULL_MAX_FILE_LINES",
    "DIFF_MAX_BYTES",
    "DIFF_MAX_FILES",
    "DIFF_MAX_FILE_LINES",
    "DOCUMENT_RENDER_TIMEOUT",
    "IMAGE_PROXY_ALLOW_NETWORKS",
    "IMAGE_PROXY_CACHE_MAX_BYTES",
    "IMAGE_PROXY_CACHE_SECONDS",
    "IMAGE_PROXY_ENABLED",
    "IMAGE_PROXY_MAX_BYTES",
    "IMAGE_PROXY_TIMEOUT",
    "SEARCH_TIMEOUT",
    "SITE_SEARCH_MAX_FILE_BYTES",
    "SITE_SEARCH_TIMEOUT",
]

DIFF_MAX_BYTES = env_int("DIFF_MAX_KB", 1024, minimum=1) * 1024
DIFF_MAX_FILES = env_int("DIFF_MAX_FILES", 300, minimum=1)
DIFF_MAX_FILE_LINES = env_int("DIFF_MAX_FILE_LINES", 2000, minimum=1)
# "Show the whole diff" and one file's full diff get these, larger, caps.
DIFF_FULL_MAX_BYTES = env_int("DIFF_FULL_MAX_KB", 16 * 1024, minimum=1) * 1024
DIFF_FULL_MAX_FILES = env_int("DIFF_FULL_MAX_FILES", 5000, minimum=1)
DIFF_FULL_MAX_FILE_LINES = env_int("DIFF_FULL_MAX_FILE_LINES", 200000, minimum=1)
# Files larger than this are offered as a raw download instead of being shown inline.
BLOB_MAX_DISPLAY_BYTES = env_int("BLOB_MAX_DISPLAY_KB", 1024, minimum=1) * 1024
# Blame and in-repository search (git grep): seconds before git is stopped and the page says so.
BLAME_TIMEOUT = env_int("BLAME_TIMEOUT", 20, minimum=1)
SEARCH_TIMEOUT = env_int("SEARCH_TIMEOUT", 10, minimum=1)
# reStructuredText is rendered by docutils in a child process killed after this many seconds.
DOCUMENT_RENDER_TIMEOUT = env_int("DOCUMENT_RENDER_TIMEOUT", 5, minimum=1)
# The image proxy (render/imageproxy.py signs, repos/imagefetch.py fetches): external images in
# rendered documents and comments are fetched by the server and served from our own origin,
# within these caps.
IMAGE_PROXY_ENABLED = env_bool("IMAGE_PROXY_ENABLED", True)
IMAGE_PROXY_MAX_BYTES = env_int("IMAGE_PROXY_MAX_KB", 5120, minimum=1) * 1024
IMAGE_PROXY_TIMEOUT = env_int("IMAGE_PROXY_TIMEOUT", 5, minimum=1)
IMAGE_PROXY_CACHE_SECONDS = env_int("IMAGE_PROXY_CACHE_SECONDS", 3600, minimum=0)
IMAGE_PROXY_CACHE_MAX_BYTES = env_int("IMAGE_PROXY_CACHE_MAX_KB", 1024, minimum=0) * 1024
# Networks the proxy may reach although they are not public (development and tests only).
IMAGE_PROXY_ALLOW_NETWORKS = env_list("IMAGE_PROXY_ALLOW_NETWORKS", [])
# The site-wide search (search/; not a repository's own, SEARCH_TIMEOUT above): files of a
# default branch larger than this are not indexed for code search; a query that runs longer than
# SITE_SEARCH_TIMEOUT seconds is stopped and answered with a message.
SITE_SEARCH_MAX_FILE_BYTES = env_int("SITE_SEARCH_MAX_FILE_KB", 1024, minimum=1) * 1024
SITE_SEARCH_TIMEOUT = env_int("SITE_SEARCH_TIMEOUT", 5, minimum=1, maximum=300)

for _network in IMAGE_PROXY_ALLOW_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"IMAGE_PROXY_ALLOW_NETWORKS: {_network!r} is not a network.") from None
