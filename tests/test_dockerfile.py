"""The Dockerfile, read as text: no Docker engine is needed (none runs on these machines)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with comments dropped and continuation lines joined."""
    logical: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    result = []
    for line in logical:
        keyword, _, args = line.partition(" ")
        result.append((keyword.upper(), args.strip()))
    return result


def _runs() -> list[str]:
    return [args for keyword, args in _instructions() if keyword == "RUN"]


def test_dockerfile_base_image():
    froms = [args for keyword, args in _instructions() if keyword == "FROM"]
    assert froms and froms[0].startswith("python:3.11-slim-bookworm"), froms


def test_dockerfile_installs_git_without_recommends():
    installs = [run for run in _runs() if "apt-get install" in run]
    assert any(re.search(r"(?<![\w-])git(?![\w-])", run) for run in installs), installs
    assert all("--no-install-recommends" in run for run in installs), installs


def test_dockerfile_installs_openssh_and_the_git_account():
    installs = " ".join(run for run in _runs() if "apt-get install" in run)
    assert "openssh-server" in installs and "openssh-client" in installs, installs
    # A real shell (sshd runs the forced command through it) and not locked ("!": sshd refuses).
    assert any(
        "useradd" in run and "--shell /bin/sh git" in run and "usermod -p '*' git" in run for run in _runs()
    )


def test_dockerfile_installs_requirements_without_cache():
    pip_runs = [run for run in _runs() if "pip install" in run]
    assert any(re.search(r"-r\s+requirements\.txt\b", run) for run in pip_runs), pip_runs
    assert all("--no-cache-dir" in run for run in pip_runs), pip_runs


def test_dockerfile_runs_as_non_root_user():
    users = [args for keyword, args in _instructions() if keyword == "USER"]
    assert users, "the Dockerfile never sets USER, so the container runs as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}, f"the final USER is {users[-1]}"


def test_dockerfile_bakes_no_secret_key_into_the_environment():
    envs = " ".join(args for keyword, args in _instructions() if keyword == "ENV")
    assert "SECRET_KEY" not in envs
    collectstatic = [run for run in _runs() if "collectstatic" in run]
    assert collectstatic, "collectstatic should run at build time"


def test_dockerfile_default_command_is_the_web_server():
    cmds = [args for keyword, args in _instructions() if keyword == "CMD"]
    assert cmds, "no CMD"
    assert json.loads(cmds[-1])[0] == "gunicorn", cmds[-1]


def test_dockerignore_keeps_local_state_and_secrets_out_of_the_image():
    patterns = {
        line.strip().strip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for required in (".venv", "var", ".git", ".env"):
        assert required in patterns, f".dockerignore does not exclude {required}"
