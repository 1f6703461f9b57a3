"""Settings, all from the environment (see docs/configuration.md).

Embedded defaults (SQLite, kombu's filesystem broker, bundles on disk) live under VAR_DIR so
that `make run` works on a fresh machine; production chooses PostgreSQL, Redis and S3 through
DATABASE_URL, CELERY_BROKER_URL and BUNDLE_STORAGE_URL alone.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from hostsite.celery_config import beat_schedule, broker_transport
from hostsite.email_config import email_config, from_address
from hostsite.env import (
    broker_url,
    bundle_storage_config,
    cidr_url_table,
    database_config,
    env_bool,
    env_int,
    env_list,
    env_str,
    site_url,
)
from hostsite.ratelimit_settings import ratelimit_cache

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var"))).resolve()

DEBUG = env_bool("DEBUG", False)

SECRET_KEY = env_str("SECRET_KEY") or ""
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (make run generates one in var/secret_key)"
        )
    SECRET_KEY = "insecure-development-only-key"  # noqa: S105 - DEBUG only, never production

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
HOST = env_str("HOST", "127.0.0.1")
PORT = env_int("PORT", 8000, minimum=1, maximum=65535)
# Absolute links printed to git clients; unset: built from the request's host.
SITE_URL = site_url(env_str("SITE_URL"))

REPO_ROOT = Path(env_str("REPO_ROOT", str(VAR_DIR / "repos"))).resolve()

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files for the API reference, from our origin
    "django_ratelimit",  # its system checks refuse caches that cannot count (repos.ratelimits)
    # Before repos: Django runs the management command of the first app that has it, and
    # sources' `repo` is repos' with `repo create --import`.
    "sources",
    "repos",
    "workspaces",
    "bundles",
    "reviews",
    "showwork",
    "notifications",
    "search",
    "sshgit",
    "replication",
]

# What apps add to git requests (hooks, their environment, hiding, bundle lists), in this order:
# hook environments and config pairs add up (repos.gitaccess). The push policy is not theirs.
GIT_ACCESS_BACKENDS = [
    "workspaces.access.backend.WorkspaceAccess",
    "bundles.access.BundleAccess",
    "reviews.access.ReviewAccess",
]
# Questions a lower app asks of a higher one, named here as the backends above are, so the lower
# app never imports it (docs/architecture.md, "Inverting a dependency"); "" answers for nobody.
# What each person may see, and what may not be published again (repos.visibility):
VISIBILITY_RULE = "workspaces.visibility.view_for"
REPUBLISHING_RULE = "workspaces.visibility.blocks_republishing"
# The open proposal of each workspace ref, for the workspace pages (workspaces.ref_links):
WORKSPACE_PROPOSAL_LINKS = "reviews.queues.open_proposal_numbers"
# The rules every push and web write is judged by (protected branches and tags, bans,
# freezes...), whatever GIT_ACCESS_BACKENDS holds; "": repos' own (repos.gitaccess.policy):
PUSH_RULES = "workspaces.selectors.rules_for"
# What a followed subject "<kind>:<id>" is, by kind (notifications.subjects):
NOTIFICATION_SUBJECTS = {
    "repository": "notifications.subjects.repository_info",
    "proposal": "reviews.events.proposal_info",
}

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # First after the security headers: a path with control characters reaches nothing else.
    "repos.middleware.RejectBadInputMiddleware",
    # The client's address from the TLS proxy's X-Forwarded-For, before anything reads it
    # (replication forwards it, rate limits count by it).
    "repos.middleware.TrustedProxyMiddleware",
    "repos.middleware.DatabaseBusyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # On a replica: reads it cannot serve fresh, and every write, go to the primary.
    "replication.middleware.ReplicaRoutingMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "repos.middleware.ContentSecurityPolicyMiddleware",
    "repos.redirects.RepositoryMovedMiddleware",
]

ROOT_URLCONF = "hostsite.urls"
WSGI_APPLICATION = "hostsite.wsgi.application"
AUTH_USER_MODEL = "repos.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'hostsite.sqlite3'}")
DATABASE_BUSY_TIMEOUT = env_int("DATABASE_BUSY_TIMEOUT_MS", 5000, minimum=0) / 1000
# What a 503 for a busy database tells the client to wait before trying again (seconds).
DATABASE_RETRY_AFTER = env_int("DATABASE_RETRY_AFTER", 2, minimum=1)
DATABASES = {"default": database_config(DATABASE_URL)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not :memory:, so the web server and Celery worker processes that tests start
    # share the test database; the pid keeps concurrent test runs apart.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
    # How long a writer waits for SQLite's write lock. Bounded, so a request under heavy
    # concurrent writing answers 503 with Retry-After (repos.middleware) while the client
    # is still there, instead of holding a web thread and then failing with a 500.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = DATABASE_BUSY_TIMEOUT
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the source tree: no collectstatic step between a checkout and `make run`.
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- cache ------------------------------------------------------------------------------------
# Shared by every process (web workers, Celery): showwork's cached graphs are invalidated by
# whichever process sees refs move. Files under VAR_DIR by default; CACHE_URL=redis://... in
# production (see showwork/cache.py).
CACHE_URL = env_str("CACHE_URL", "")
CACHES: dict[str, dict[str, Any]]
if CACHE_URL.startswith(("redis://", "rediss://")):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
            "OPTIONS": {"MAX_ENTRIES": 20000},
        }
    }
# Rate limits count in a cache of their own (hostsite.ratelimit_settings): one that increments
# atomically, and whose culling never drops a count to make room for a cached page.
CACHES["ratelimit"] = ratelimit_cache(CACHE_URL, VAR_DIR)

# --- Celery -----------------------------------------------------------------------------------
CELERY_BROKER_URL = broker_url(env_str("CELERY_BROKER_URL", "filesystem://"))
BROKER_DIR = VAR_DIR / "broker"
# Tasks are acknowledged late and redelivered when their worker dies, on every broker:
# hostsite.fsbroker keeps a fetched message in its consumer's folder until the ack, and
# hostsite.redisbroker renews the visibility timeout of messages a live worker holds.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 300, minimum=5)
CELERY_BROKER_TRANSPORT, CELERY_BROKER_TRANSPORT_OPTIONS, _broker_ssl = broker_transport(
    CELERY_BROKER_URL, BROKER_DIR, CELERY_VISIBILITY_TIMEOUT
)
if _broker_ssl:
    CELERY_BROKER_USE_SSL = _broker_ssl
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "hostsite")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes every database connection before and after each task unless this
# is set: a new PostgreSQL session (a server process forked) per task. hostsite.celery applies
# Django's own rule between tasks instead: CONN_MAX_AGE, and a broken connection dropped.
CELERY_DB_REUSE_MAX = 1 << 30
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = beat_schedule()

# Pushes are spooled here by post-receive until recorded (repos.push_spool); a file younger than
# the grace period is left to the web process that may still be recording it, unless that
# process is gone. The grace exceeds the longest wait for the database a recording may spend.
PUSH_SPOOL_DIR = Path(env_str("PUSH_SPOOL_DIR", str(VAR_DIR / "spool" / "pushes"))).resolve()
PUSH_SPOOL_GRACE_SECONDS = env_int("PUSH_SPOOL_GRACE_SECONDS", 300, minimum=0)

# --- email (hostsite.email_config, notifications.email) ---------------------------------------
# Unset: no mail, notifications stay on the site. `make run` sets console:// (mail is printed).
EMAIL_URL = env_str("EMAIL_URL", "")
_email = email_config(EMAIL_URL)
EMAIL_ENABLED = _email.enabled
EMAIL_BACKEND = _email.backend
EMAIL_HOST, EMAIL_PORT = _email.host, _email.port
EMAIL_HOST_USER, EMAIL_HOST_PASSWORD = _email.user, _email.password
EMAIL_USE_TLS, EMAIL_USE_SSL = _email.use_tls, _email.use_ssl
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 30, minimum=1)
DEFAULT_FROM_EMAIL = from_address(env_str("DEFAULT_FROM_EMAIL"), SITE_URL)
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- bundles --------------------------------------------------------------------------------
BUNDLE_STORAGE_URL = env_str("BUNDLE_STORAGE_URL", f"file://{VAR_DIR / 'bundles'}")
S3_ENDPOINT_URL = env_str("S3_ENDPOINT_URL")
BUNDLE_STORAGE = bundle_storage_config(BUNDLE_STORAGE_URL, S3_ENDPOINT_URL)
# zstd flavor: level 3 with long-distance matching gave 71.6 MB against 126.5 MB for zlib on
# git/git (DESIGN.md); higher levels cost build time for a few more percent.
BUNDLE_ZSTD_LEVEL = env_int("BUNDLE_ZSTD_LEVEL", 3, minimum=1, maximum=19)
# Collapse base + incrementals into a new base when there are more than this many incrementals
# (git-bundle-server collapses at 5) or they add up to this percentage of the base's size.
BUNDLE_COLLAPSE_COUNT = env_int("BUNDLE_COLLAPSE_COUNT", 5, minimum=0)
BUNDLE_COLLAPSE_FRACTION = env_int("BUNDLE_COLLAPSE_PERCENT", 50, minimum=1) / 100
# Pushes within this many seconds of each other share one build.
BUNDLE_DEBOUNCE_SECONDS = env_int("BUNDLE_DEBOUNCE_SECONDS", 30, minimum=0)
# Objects of superseded bundles stay this long, so clients mid-download are not broken.
BUNDLE_DELETE_GRACE = timedelta(hours=env_int("BUNDLE_DELETE_GRACE_HOURS", 24, minimum=0))
# A running build renews its heartbeat every fifth of this; a build not renewed for this long is
# marked failed (its worker hung). A dead worker's lock goes with its process (repos.locking).
BUNDLE_STALE_CLAIM = timedelta(seconds=env_int("BUNDLE_CLAIM_LEASE_SECONDS", 300, minimum=5))
# Per-client base URLs for public bundles (e.g. same-region S3 for cloud clients, a CDN for the
# rest): "10.0.0.0/8=https://bucket.s3.eu-central-1.amazonaws.com/ 0.0.0.0/0=https://cdn.example/".
# Unmatched clients get the storage's own URL.
BUNDLE_BASE_URLS = cidr_url_table(env_str("BUNDLE_BASE_URLS"))
# The protocol v2 advertisement (every upload-pack request of a repository with bundles) trusts
# a storage check this recent instead of asking storage again (bundles.listing).
BUNDLE_PRESENCE_CACHE_SECONDS = env_int("BUNDLE_PRESENCE_CACHE_SECONDS", 60, minimum=0)
BUNDLE_GIT_TIMEOUT = env_int("BUNDLE_GIT_TIMEOUT", 6 * 3600, minimum=10)

# --- git ------------------------------------------------------------------------------------
GIT_BINARY = env_str("GIT_BINARY", "git")
GIT_TIMEOUT = env_int("GIT_TIMEOUT", 600, minimum=1)
# Repository imports may be large; they get their own limit.
GIT_IMPORT_TIMEOUT = env_int("GIT_IMPORT_TIMEOUT", 6 * 3600, minimum=1)

# Smart HTTP limits. A gzip request body is inflated to a spool file before git starts, so a
# gzip bomb gets a clean 413; plain bodies stream straight into git.
GIT_HTTP_MAX_INFLATED = env_int("GIT_HTTP_MAX_INFLATED_MB", 256, minimum=1) * 1024 * 1024
GIT_HTTP_MAX_UPLOAD_REQUEST = env_int("GIT_HTTP_MAX_UPLOAD_REQUEST_MB", 256, minimum=1) * 1024 * 1024
# receive.maxInputSize: the largest pack a push may send.
GIT_MAX_PUSH_SIZE = env_int("GIT_MAX_PUSH_MB", 2048, minimum=1) * 1024 * 1024
# Webhooks: attempts per delivery, and the first retry delay (doubling each time).
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 8, minimum=1)
WEBHOOK_RETRY_BASE_SECONDS = env_int("WEBHOOK_RETRY_BASE_SECONDS", 30, minimum=1)
# Off in production: webhooks must not reach the server's own network (SSRF).
WEBHOOK_ALLOW_PRIVATE_TARGETS = env_bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", False)

# Workspaces: refs per user per repository (a repository setting may override it).
WORKSPACE_REF_LIMIT = env_int("WORKSPACE_REF_LIMIT", 1000, minimum=1)
# Workspace refs deleted because their work landed stay restorable (under refs/archive/) this long.
WORKSPACE_ARCHIVE_DAYS = env_int("WORKSPACE_ARCHIVE_DAYS", 30, minimum=1)
# The web editor (workspaces.webedit): files larger than this are view-only (no upload may be
# larger), and what one upload of files may bring in all.
WEB_EDIT_MAX_BYTES = env_int("WEB_EDIT_MAX_KB", 1024, minimum=1) * 1024
WEB_UPLOAD_MAX_BYTES = env_int("WEB_UPLOAD_MAX_MB", 25, minimum=1) * 1024 * 1024
# A form posting a whole file (CRLF line endings, URL-encoded) is larger than the file: Django's
# own limit on form bodies must leave room for the largest editable one.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(2_621_440, 3 * WEB_EDIT_MAX_BYTES + 64 * 1024)
# How long a deleted repository stays restorable before the purge task removes it.
REPOSITORY_DELETE_RETENTION_DAYS = env_int("REPOSITORY_DELETE_RETENTION_DAYS", 30, minimum=0)
GIT_HTTP_TIMEOUT = env_int("GIT_HTTP_TIMEOUT", 3600, minimum=10)

# Settings kept in modules of their own, read from here: the REST API's; browsing and finding
# (diff and file caps, blame and search limits, a repository's and the site-wide search's,
# documents, the image proxy); git over SSH's (sshgit/).
from hostsite.api_settings import (  # noqa: E402, F401 - settings Django reads from here
    API_MAX_BODY,
    API_MAX_JSON_DEPTH,
    REST_FRAMEWORK,
    SPECTACULAR_SETTINGS,
)
from hostsite.browse_settings import *  # noqa: E402, F403 - its __all__: browsing, blame, search
from hostsite.git_settings import *  # noqa: E402, F403 - its __all__: maintenance, imports, mirrors
from hostsite.node_settings import *  # noqa: E402, F403 - nodes and replication (docs/operations.md)
from hostsite.ratelimit_settings import *  # noqa: E402, F403 - its __all__: rate limits and their cache
from hostsite.ssh_settings import *  # noqa: E402, F403 - its __all__, the SSH_* settings

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
