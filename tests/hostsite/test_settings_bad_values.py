"""Every integer and boolean setting refuses a bad value at start-up with hostsite.env's message,
naming the variable, and is documented in docs/configuration.md.

The variables are found in the modules that read them (calls of env_int and env_bool with a
literal name), so a setting added tomorrow is covered without touching this file; each bad
value is loaded through a fresh import of hostsite.settings and hostsite.gunicorn_conf, as a
starting server does."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
# What settings.py imports and gunicorn reads; hooks and apps read no integers of their own here.
MODULES = [*sorted((BASE_DIR / "hostsite").glob("*settings.py")), BASE_DIR / "hostsite" / "celery_config.py"]
MODULES.append(BASE_DIR / "hostsite" / "gunicorn_conf.py")

PROBE = """
import importlib, json, os, sys
results = {}
for name, value in json.loads(sys.argv[1]):
    for module in [m for m in sys.modules if m.startswith("hostsite.")]:
        del sys.modules[module]
    os.environ[name] = value
    try:
        importlib.import_module("hostsite.settings")
        importlib.import_module("hostsite.gunicorn_conf")
        results[f"{name}={value}"] = None
    except Exception as exc:
        results[f"{name}={value}"] = f"{type(exc).__name__}: {exc}"
    del os.environ[name]
print(json.dumps(results))
"""


def _settings_read() -> dict[str, tuple[str, dict[str, int]]]:
    """name -> (parser, its bounds) for every env_int / env_bool call with a literal name."""
    found: dict[str, tuple[str, dict[str, int]]] = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("env_int", "env_bool")):
                continue
            if not (node.args and isinstance(node.args[0], ast.Constant)):
                continue
            bounds = {
                k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg in ("minimum", "maximum")
            }
            found.setdefault(node.args[0].value, (node.func.id, bounds))
    return found


SETTINGS = _settings_read()


def _expected(name: str, parser: str, bounds: dict[str, int]) -> dict[str, str]:
    """bad value -> the message that must stop the start."""
    if parser == "env_bool":
        return {"perhaps": f"{name} must be a boolean (1/0, true/false, yes/no, on/off), got 'perhaps'"}
    cases = {"twelve": f"{name} must be an integer, got 'twelve'"}
    low, high = bounds.get("minimum"), bounds.get("maximum")
    if low is not None:
        below = low - 1
        message = f"between {low} and {high}" if high is not None else f"at least {low}"
        cases[str(below)] = f"{name} must be {message}, got {below}"
    if high is not None:
        above = high + 1
        message = f"between {low} and {high}" if low is not None else f"at most {high}"
        cases[str(above)] = f"{name} must be {message}, got {above}"
    return cases


def test_the_scan_finds_the_settings_it_must():
    # Guards the scan itself: these are read by three different modules.
    assert SETTINGS["PORT"] == ("env_int", {"minimum": 1, "maximum": 65535})
    assert SETTINGS["DEBUG"][0] == "env_bool"
    assert "DIFF_MAX_FILES" in SETTINGS and "WEB_CONCURRENCY" in SETTINGS
    assert len(SETTINGS) > 50


def test_every_integer_and_boolean_setting_is_documented():
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", (BASE_DIR / "docs" / "configuration.md").read_text()))
    assert sorted(set(SETTINGS) - documented) == []


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    cases = [
        (name, value)
        for name, (parser, bounds) in SETTINGS.items()
        for value in _expected(name, parser, bounds)
    ]
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS and k != "DJANGO_SETTINGS_MODULE"}
    env.update({"SECRET_KEY": "k" * 50, "VAR_DIR": str(tmp_path_factory.mktemp("var"))})
    for name in ("DEBUG", "DATABASE_URL", "CELERY_BROKER_URL", "BUNDLE_STORAGE_URL", "S3_ENDPOINT_URL"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(cases)],
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_bad_value_stops_the_start_with_the_documented_message(refusals, name):
    parser, bounds = SETTINGS[name]
    for value, message in _expected(name, parser, bounds).items():
        assert refusals[f"{name}={value}"] == f"ImproperlyConfigured: {message}"
