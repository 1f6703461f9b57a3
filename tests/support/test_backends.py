"""The backends `make test` picks: the developer's choice first, then local servers, then the
embedded defaults, each said in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.backends import checkout_tag, choose


def never_probed() -> str | None:
    raise AssertionError("probed the local servers although the developer chose")


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"DATABASE_URL": "", "CELERY_BROKER_URL": ""}, "database embedded, broker embedded"),
        ({"DATABASE_URL": ""}, "database embedded, broker embedded, as set by DATABASE_URL"),
        ({"CELERY_BROKER_URL": "redis://h:6379/3"}, "broker Redis, as set by CELERY_BROKER_URL"),
        (
            {"DATABASE_URL": "postgres://u@h/db", "CELERY_BROKER_URL": "redis://h/0"},
            "database PostgreSQL, broker Redis, as set by DATABASE_URL and CELERY_BROKER_URL",
        ),
    ],
)
def test_what_the_developer_set_even_empty_is_kept_and_nothing_probed(environ, said):
    choice = choose(environ, probe=never_probed)
    assert said in choice.line
    assert choice.env == {}


def test_local_servers_are_used_when_both_answer():
    choice = choose({}, probe=lambda: None, checkout=Path("/src/a"))
    tag = checkout_tag(Path("/src/a"))
    assert choice.env == {
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/hostsite_{tag}",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "CELERY_KEY_PREFIX": f"hostsite-{tag}:",
    }
    assert choice.line.startswith("backends: PostgreSQL")
    assert "\n" not in choice.line


def test_two_checkouts_share_no_database_and_no_keys():
    one = choose({}, probe=lambda: None, checkout=Path("/src/a")).env
    two = choose({}, probe=lambda: None, checkout=Path("/src/b")).env
    assert one["DATABASE_URL"] != two["DATABASE_URL"]
    assert one["CELERY_KEY_PREFIX"] != two["CELERY_KEY_PREFIX"]


def test_the_fallback_says_why():
    choice = choose({}, probe=lambda: "Redis at 127.0.0.1:6379: Connection refused")
    assert choice.env == {}
    assert choice.line == (
        "backends: embedded defaults (SQLite, filesystem broker): Redis at 127.0.0.1:6379: Connection refused"
    )


def test_the_command_runs_with_the_choice_after_one_line():
    """Through the real entry point (with the choice made by the developer, so the shared
    servers are not touched): one line, then the command, with the environment as given."""
    env = {**os.environ, "DATABASE_URL": "", "CELERY_BROKER_URL": ""}
    script = "import os; print(repr(os.environ['DATABASE_URL']))"
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.backends", sys.executable, "-c", script],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.splitlines() == [
        "backends: database embedded, broker embedded, as set by DATABASE_URL and CELERY_BROKER_URL",
        "''",
    ]
