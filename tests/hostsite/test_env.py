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


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("abc", "PORT must be an integer, got 'abc'"),
        ("80.5", "PORT must be an integer, got '80.5'"),
        ("70000", "PORT must be between 1 and 65535, got 70000"),
    ],
)
def test_env_int_messages_are_the_documented_ones(monkeypatch, raw, message):
    monkeypatch.setenv("PORT", raw)
    with pytest.raises(ImproperlyConfigured) as refused:
        env.env_int("PORT", 8000, minimum=1, maximum=65535)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        ({"minimum": 1}, "WORKERS must be at least 1, got 0"),
        ({"maximum": -1}, "WORKERS must be at most -1, got 0"),
        ({"minimum": 1, "maximum": 9}, "WORKERS must be between 1 and 9, got 0"),
    ],
)
def test_env_int_names_only_the_bounds_it_has(monkeypatch, bounds, message):
    monkeypatch.setenv("WORKERS", "0")
    with pytest.raises(ImproperlyConfigured) as refused:
        env.env_int("WORKERS", 2, **bounds)
    assert str(refused.value) == message


@pytest.mark.parametrize("raw", ["2", "maybe", "ture", "y"])
def test_env_bool_message_lists_the_spellings(monkeypatch, raw):
    monkeypatch.setenv("FLAG", raw)
    with pytest.raises(ImproperlyConfigured) as refused:
        env.env_bool("FLAG")
    assert str(refused.value) == f"FLAG must be a boolean (1/0, true/false, yes/no, on/off), got {raw!r}"


@pytest.mark.parametrize(("raw", "default"), [(None, 8000), ("", 8000), ("  ", 8000)])
def test_env_int_default_when_unset_or_empty(monkeypatch, raw, default):
    monkeypatch.delenv("PORT", raising=False)
    if raw is not None:
        monkeypatch.setenv("PORT", raw)
    assert env.env_int("PORT", default, minimum=1, maximum=65535) == default


def test_env_networks_parses_addresses_and_networks(monkeypatch):
    monkeypatch.setenv("NETS", "10.0.0.0/8, 192.0.2.7 ,::1")
    assert [str(n) for n in env.env_networks("NETS")] == ["10.0.0.0/8", "192.0.2.7/32", "::1/128"]


@pytest.mark.parametrize("raw", ["10.0.0.0/33", "example.org", "10.0.0.0/8,300.1.1.1"])
def test_env_networks_rejects_naming_the_variable_and_the_item(monkeypatch, raw):
    monkeypatch.setenv("NETS", raw)
    with pytest.raises(
        ImproperlyConfigured, match=r"^NETS: '.+' is not an address or a network in CIDR notation$"
    ):
        env.env_networks("NETS")


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


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("10/m", (10, 60)),
        ("30/5m", (30, 300)),
        ("5000/h", (5000, 3600)),
        ("2/d", (2, 86400)),
        (" OFF ", None),
    ],
)
def test_env_rate_parses(monkeypatch, raw, expected):
    monkeypatch.setenv("RATELIMIT_X", raw)
    assert env.env_rate("RATELIMIT_X", "1/s") == expected


@pytest.mark.parametrize("raw", ["10", "ten/m", "10/w", "0/m", "10/0m", "10/8d", "-1/m", "10/m/s"])
def test_env_rate_rejects_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("RATELIMIT_X", raw)
    with pytest.raises(ImproperlyConfigured, match="RATELIMIT_X"):
        env.env_rate("RATELIMIT_X", "1/s")
