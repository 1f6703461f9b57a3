"""The settings module itself, loaded in a fresh interpreter with a controlled environment."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'debug': s.DEBUG, 'engine': s.DATABASES['default']['ENGINE'], "
    "'db': str(s.DATABASES['default']['NAME']), 'broker': s.CELERY_BROKER_URL, "
    "'bundles': s.BUNDLE_STORAGE, 'repo_root': str(s.REPO_ROOT), 'hosts': s.ALLOWED_HOSTS, 'port': s.PORT}))"
)
SETTING_VARS = [
    "DEBUG",
    "SECRET_KEY",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "BUNDLE_STORAGE_URL",
    "S3_ENDPOINT_URL",
    "REPO_ROOT",
    "ALLOWED_HOSTS",
    "HOST",
    "PORT",
    "VAR_DIR",
]


def load_settings(tmp_path, **overrides):
    env = {k: v for k, v in os.environ.items() if k not in SETTING_VARS}
    env["DJANGO_SETTINGS_MODULE"] = "hostsite.settings"
    env["VAR_DIR"] = str(tmp_path / "var")
    env.update(overrides)
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=BASE_DIR, capture_output=True, text=True, timeout=60
    )


def test_embedded_defaults(tmp_path):
    result = load_settings(tmp_path, SECRET_KEY="k" * 50)
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    var = tmp_path / "var"
    assert values["debug"] is False
    assert values["engine"] == "django.db.backends.sqlite3"
    assert values["db"] == str(var / "hostsite.sqlite3")
    assert values["broker"] == "filesystem://"
    assert values["bundles"] == {"backend": "file", "path": str(var / "bundles")}
    assert values["repo_root"] == str(var / "repos")
    assert values["port"] == 8000


def test_production_values(tmp_path):
    result = load_settings(
        tmp_path,
        SECRET_KEY="k" * 50,
        DATABASE_URL="postgres://hs@db:5432/hostsite",
        CELERY_BROKER_URL="redis://cache:6379/1",
        BUNDLE_STORAGE_URL="s3://bundles-bucket/prefix",
        S3_ENDPOINT_URL="http://minio:9000",
        REPO_ROOT="/srv/repos",
        ALLOWED_HOSTS="git.example.org",
        PORT="9000",
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert values["engine"] == "django.db.backends.postgresql"
    assert values["db"] == "hostsite"
    assert values["broker"] == "redis://cache:6379/1"
    assert values["bundles"]["bucket"] == "bundles-bucket"
    assert values["bundles"]["endpoint_url"] == "http://minio:9000"
    assert values["repo_root"] == "/srv/repos"
    assert values["hosts"] == ["git.example.org"]
    assert values["port"] == 9000


def test_debug_without_secret_key_starts(tmp_path):
    result = load_settings(tmp_path, DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["debug"] is True


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({}, "SECRET_KEY"),
        ({"SECRET_KEY": "k", "DATABASE_URL": "mysql://x/y"}, "DATABASE_URL"),
        ({"SECRET_KEY": "k", "CELERY_BROKER_URL": "kafka://x"}, "CELERY_BROKER_URL"),
        ({"SECRET_KEY": "k", "BUNDLE_STORAGE_URL": "gs://x"}, "BUNDLE_STORAGE_URL"),
        (
            {"SECRET_KEY": "k", "BUNDLE_STORAGE_URL": "s3://bkt/x", "S3_ENDPOINT_URL": "nope"},
            "S3_ENDPOINT_URL",
        ),
        ({"SECRET_KEY": "k", "PORT": "http"}, "PORT"),
        ({"SECRET_KEY": "k", "DEBUG": "perhaps"}, "DEBUG"),
        ({"SECRET_KEY": "k", "RATELIMIT_SEARCH": "lots"}, "RATELIMIT_SEARCH"),
        ({"SECRET_KEY": "k", "TRUSTED_PROXIES": "the-proxy"}, "TRUSTED_PROXIES"),
    ],
)
def test_bad_production_configuration_refuses_to_start(tmp_path, overrides, named):
    result = load_settings(tmp_path, **overrides)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert named in result.stderr.splitlines()[-1]


def test_manage_check_refuses_without_secret_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in SETTING_VARS}
    env["VAR_DIR"] = str(tmp_path / "var")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


RATE_PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'cache': s.CACHES[s.RATELIMIT_USE_CACHE], 'rates': s.RATE_LIMITS, "
    "'proxies': [str(n) for n in s.TRUSTED_PROXIES]}))"
)


@pytest.mark.parametrize(
    ("cache_url", "backend"),
    [("", "diskcache.DjangoCache"), ("redis://cache:6379/1", "django.core.cache.backends.redis.RedisCache")],
)
def test_rate_limits_and_their_cache(tmp_path, cache_url, backend):
    env = {k: v for k, v in os.environ.items() if k not in SETTING_VARS and not k.startswith("RATELIMIT_")}
    env.update(
        DJANGO_SETTINGS_MODULE="hostsite.settings",
        VAR_DIR=str(tmp_path / "var"),
        SECRET_KEY="k" * 50,
        CACHE_URL=cache_url,
        RATELIMIT_BLAME="5/30s",
        RATELIMIT_ARCHIVE="off",
        TRUSTED_PROXIES="127.0.0.1, 10.0.0.0/8",
    )
    result = subprocess.run(
        [sys.executable, "-c", RATE_PROBE], env=env, cwd=BASE_DIR, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert values["cache"]["BACKEND"] == backend
    if not cache_url:
        assert values["cache"]["LOCATION"] == str(tmp_path / "var" / "ratelimit")
    assert values["rates"]["blame"] == [5, 30]
    assert values["rates"]["archive"] is None
    assert values["rates"]["signin-account"] == [10, 900]  # the documented default
    assert values["proxies"] == ["127.0.0.1/32", "10.0.0.0/8"]


def test_redis_broker_keys_take_the_configured_prefix(monkeypatch, tmp_path):
    from hostsite.celery_config import broker_transport

    monkeypatch.delenv("CELERY_KEY_PREFIX", raising=False)
    _transport, options, _ssl = broker_transport("redis://cache:6379/0", tmp_path, 300)
    assert "global_keyprefix" not in options
    monkeypatch.setenv("CELERY_KEY_PREFIX", "hostsite-a:")
    _transport, options, _ssl = broker_transport("redis://cache:6379/0", tmp_path, 300)
    assert options["global_keyprefix"] == "hostsite-a:"
