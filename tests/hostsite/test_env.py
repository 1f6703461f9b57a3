import pytest
from django.core.exceptions import ImproperlyConfigured

from hostsite import env


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("YES", True), ("on", True), ("0", False), ("false", False), ("", False)],
)
def test_env_bool_accepts_common_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("FLAG", raw)
    assert env.env_bool("FLAG") is expected


def test_env_bool_rejects_garbage_naming_the_variable(monkeypatch):
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="FLAG"):
        env.env_bool("FLAG")


def test_env_bool_default_when_unset(monkeypatch):
    monkeypatch.delenv("FLAG", raising=False)
    assert env.env_bool("FLAG", True) is True


@pytest.mark.parametrize("raw", ["abc", "80.5", "0", "70000", "-1"])
def test_env_int_rejects_bad_ports(monkeypatch, raw):
    monkeypatch.setenv("PORT", raw)
    with pytest.raises(ImproperlyConfigured, match="PORT"):
        env.env_int("PORT", 8000, minimum=1, maximum=65535)


def test_env_int_parses(monkeypatch):
    monkeypatch.setenv("PORT", " 8080 ")
    assert env.env_int("PORT", 8000, minimum=1, maximum=65535) == 8080


def test_env_list_splits_and_strips(monkeypatch):
    monkeypatch.setenv("ALLOWED_HOSTS", " a.example , b.example,, ")
    assert env.env_list("ALLOWED_HOSTS", []) == ["a.example", "b.example"]


def test_required_string(monkeypatch):
    monkeypatch.delenv("SOMETHING", raising=False)
    with pytest.raises(ImproperlyConfigured, match="SOMETHING must be set"):
        env.env_str("SOMETHING", required=True)


def test_database_sqlite():
    config = env.database_config("sqlite:////srv/hostsite/db.sqlite3")
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["NAME"] == "/srv/hostsite/db.sqlite3"
    assert config["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def test_database_postgres():
    config = env.database_config("postgres://hs:secret@db.internal:6543/hostsite")
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["USER"], config["PASSWORD"], config["HOST"], config["PORT"], config["NAME"]) == (
        "hs",
        "secret",
        "db.internal",
        6543,
        "hostsite",
    )


@pytest.mark.parametrize(
    "url", ["mysql://root@localhost/hostsite", "postgres://localhost", "sqlite://", "nonsense", ""]
)
def test_database_rejects_unsupported_urls(url):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        env.database_config(url)


@pytest.mark.parametrize("url", ["filesystem://", "redis://127.0.0.1:6379/0", "amqp://guest@localhost//"])
def test_broker_urls(url):
    assert env.broker_url(url) == url


@pytest.mark.parametrize("url", ["http://x", "redis", "kafka://x"])
def test_broker_rejects(url):
    with pytest.raises(ImproperlyConfigured, match="CELERY_BROKER_URL"):
        env.broker_url(url)


def test_bundle_storage_file():
    assert env.bundle_storage_config("file:///srv/bundles", None) == {
        "backend": "file",
        "path": "/srv/bundles",
    }


def test_bundle_storage_s3_with_endpoint():
    assert env.bundle_storage_config("s3://hostsite-bundles/prod/v1", "http://127.0.0.1:9000") == {
        "backend": "s3",
        "bucket": "hostsite-bundles",
        "prefix": "prod/v1",
        "endpoint_url": "http://127.0.0.1:9000",
    }


@pytest.mark.parametrize(
    ("url", "endpoint", "names"),
    [
        ("s3://", None, "BUNDLE_STORAGE_URL"),
        ("s3://Bad_Bucket/x", None, "BUNDLE_STORAGE_URL"),
        ("file://relative/path", None, "BUNDLE_STORAGE_URL"),
        ("ftp://host/x", None, "BUNDLE_STORAGE_URL"),
        ("s3://bucket/x", "minio:9000", "S3_ENDPOINT_URL"),
    ],
)
def test_bundle_storage_rejects(url, endpoint, names):
    with pytest.raises(ImproperlyConfigured, match=names):
        env.bundle_storage_config(url, endpoint)


def test_cidr_url_table_most_specific_first():
    table = env.cidr_url_table(
        "0.0.0.0/0=https://cdn.example, 10.0.0.0/8=https://s3.internal/x/ ::1/128=http://l"
    )
    assert [(str(n), url) for n, url in table] == [
        ("::1/128", "http://l/"),
        ("10.0.0.0/8", "https://s3.internal/x/"),
        ("0.0.0.0/0", "https://cdn.example/"),
    ]
    assert env.cidr_url_table(None) == [] and env.cidr_url_table("  ") == []


@pytest.mark.parametrize("value", ["10.0.0.0/8", "10.0.0.0/8=ftp://x", "300.0.0.0/8=https://x", "=https://x"])
def test_cidr_url_table_rejects(value):
    with pytest.raises(ImproperlyConfigured, match="BUNDLE_BASE_URLS"):
        env.cidr_url_table(value)


def test_site_url_keeps_a_path_and_ends_in_one_slash():
    assert env.site_url("https://git.example.org") == "https://git.example.org/"
    assert env.site_url("http://h:8080/forge//") == "http://h:8080/forge/"
    assert env.site_url(None) == "" and env.site_url("") == ""


@pytest.mark.parametrize(
    "value",
    ["git.example.org", "ftp://h/", "https://h/?a=1", "https://h/#x", "https://h/\x1b[31m", "https://h/é"],
)
def test_site_url_rejects(value):
    with pytest.raises(ImproperlyConfigured, match="SITE_URL"):
        env.site_url(value)
