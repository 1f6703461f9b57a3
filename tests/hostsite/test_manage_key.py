"""manage.py finds the key `make run` keeps in VAR_DIR/secret_key; production entry points do not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]
PRINT_KEY = "from django.conf import settings; print(settings.SECRET_KEY)"
# Everything that could hand the child a key or move VAR_DIR, so each test sets only its own.
CLEARED = {"DEBUG", "SECRET_KEY", "VAR_DIR", "DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}


def run(
    argv: list[str], var_dir: Path, *, cwd: Path = BASE_DIR, **overrides: str
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["VAR_DIR"] = str(var_dir)
    env.update(overrides)
    return subprocess.run(
        [sys.executable, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def key_file(var_dir: Path, key: str) -> None:
    var_dir.mkdir(parents=True, exist_ok=True)
    path = var_dir / "secret_key"
    path.write_text(key + "\n")
    path.chmod(0o600)


def test_manage_reads_the_key_make_run_generated(tmp_path):
    var_dir = tmp_path / "var"
    key_file(var_dir, "key-from-the-var-dir")
    result = run(["manage.py", "shell", "--no-imports", "-c", PRINT_KEY], var_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "key-from-the-var-dir"
    assert run(["manage.py", "check"], var_dir).returncode == 0


def test_a_relative_var_dir_resolves_against_the_working_directory_as_in_settings(tmp_path):
    key_file(tmp_path / "var", "key-beside-the-caller")
    result = run(
        [str(BASE_DIR / "manage.py"), "shell", "--no-imports", "-c", PRINT_KEY], Path("var"), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "key-beside-the-caller"


def test_an_explicit_key_wins_over_the_file(tmp_path):
    var_dir = tmp_path / "var"
    key_file(var_dir, "key-from-the-var-dir")
    result = run(
        ["manage.py", "shell", "--no-imports", "-c", PRINT_KEY],
        var_dir,
        SECRET_KEY="key-from-the-environment",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "key-from-the-environment"


def test_without_key_and_without_file_manage_refuses_clearly(tmp_path):
    result = run(["manage.py", "check"], tmp_path / "var")
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "ImproperlyConfigured" in last and "SECRET_KEY must be set when DEBUG is off" in last


def test_an_empty_key_file_is_no_key(tmp_path):
    var_dir = tmp_path / "var"
    key_file(var_dir, "")
    result = run(["manage.py", "check"], var_dir)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_wsgi_still_refuses_without_a_key_beside_the_file(tmp_path):
    # gunicorn loads hostsite.wsgi: the key file must not leak into production start-up.
    var_dir = tmp_path / "var"
    key_file(var_dir, "key-from-the-var-dir")
    result = run(["-c", "import hostsite.wsgi"], var_dir)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
