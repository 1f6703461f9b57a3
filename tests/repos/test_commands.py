"""The scriptable management commands, run as an operator would: `python manage.py ...`.

Each command's successes and one refusal per test run as a child process (exit status, what
goes to stdout and stderr); the other refusals and the users a test needs run the same command
in this process (call_command), which spares a Django start each."""

import io
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from repos import tokens
from repos.models import AccessToken, Membership, Repository, Role, User
from tests.gitutil import make_history

BASE_DIR = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def manage(live_env):
    """Run manage.py in a child process against the test database, like a script would."""

    def run(*args, stdin: str | None = None):
        return subprocess.run(
            [sys.executable, str(BASE_DIR / "manage.py"), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=live_env,
            cwd=BASE_DIR,
            timeout=120,
        )

    return run


def command(*args) -> str:
    """The command, run in this process; what it printed."""
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def refusal(*args) -> str:
    """The command, run in this process, must refuse: its message (what manage.py prints)."""
    with pytest.raises(CommandError) as refused:
        command(*args)
    return str(refused.value)


def test_user_create_with_password_from_stdin(manage):
    result = manage(
        "user",
        "create",
        "alice",
        "--email",
        "alice@example.invalid",
        "--password-stdin",
        stdin="long-enough-passphrase-42\n",
    )
    assert result.returncode == 0, result.stderr
    user = User.objects.get(username="alice")
    assert user.check_password("long-enough-passphrase-42")
    assert user.email == "alice@example.invalid" and not user.is_staff


def test_user_create_staff_and_errors(manage):
    assert manage("user", "create", "root-admin", "--staff").returncode == 0
    assert User.objects.get(username="root-admin").is_staff
    dup = manage("user", "create", "root-admin")
    assert dup.returncode != 0 and "taken" in dup.stderr
    assert "Usernames use" in refusal("user", "create", "../etc")
    weak = manage("user", "create", "weakling", "--password-stdin", stdin="123\n")
    assert weak.returncode != 0 and "password" in weak.stderr.lower()
    assert not User.objects.filter(username__in=["weakling", "../etc"]).exists()


def test_token_create_prints_only_the_token(manage):
    command("user", "create", "bob")
    result = manage("token", "create", "bob", "--scope", "write")
    assert result.returncode == 0, result.stderr
    secret = result.stdout.strip()
    assert result.stdout == secret + "\n"
    assert tokens.looks_like_token(secret)
    token = AccessToken.objects.get(digest=tokens.digest(secret))
    assert token.user.username == "bob" and token.scope == "write"
    read = manage("token", "create", "bob").stdout.strip()
    assert AccessToken.objects.get(digest=tokens.digest(read)).scope == "read"
    nobody = manage("token", "create", "nobody")
    assert nobody.returncode != 0 and "no user named 'nobody'" in nobody.stderr and not nobody.stdout
    assert "invalid choice: 'admin'" in refusal("token", "create", "bob", "--scope", "admin")
    assert AccessToken.objects.count() == 2


def test_repo_create_and_member(manage):
    command("user", "create", "carol")
    command("user", "create", "dave")
    result = manage("repo", "create", "carol/project", "--private")
    assert result.returncode == 0, result.stderr
    repo = Repository.objects.get(name="project")
    assert repo.visibility == "private" and repo.owner.username == "carol"
    assert (repo.disk_path / "HEAD").exists()
    result = manage("repo", "member", "carol/project", "dave", "--role", "maintainer")
    assert result.returncode == 0, result.stderr
    assert Membership.objects.get(repository=repo, user__username="dave").role == Role.MAINTAINER
    nope = manage("repo", "member", "carol/nope", "dave", "--role", "reader")
    assert nope.returncode != 0 and "no repository carol/nope" in nope.stderr
    assert "invalid choice: 'owner'" in refusal("repo", "member", "carol/project", "dave", "--role", "owner")
    for bad in ["carol/../x", "carol", "carol/a/b", "carol/API", "nobody/x"]:
        assert refusal("repo", "create", bad).strip(), bad
    assert Repository.objects.count() == 1
    assert Membership.objects.get(repository=repo, user__username="dave").role == Role.MAINTAINER


def test_repo_create_import_shows_progress(manage, tmp_path, git_home):
    src = tmp_path / "src"
    expected = make_history(src, git_home)
    command("user", "create", "erin")
    result = manage("repo", "create", "erin/imported", "--import", str(src))
    assert result.returncode == 0, result.stderr
    # git's own progress meter reached the operator's terminal (stderr).
    assert "Receiving objects" in result.stderr or "Unpacking objects" in result.stderr
    repo = Repository.objects.get(name="imported")
    out = subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        env=git_home,
        check=True,
    ).stdout
    assert dict(line.split(" ", 1) for line in out.splitlines()) == expected
    assert repo.default_branch == "trunk"


def test_repo_create_import_failure_creates_nothing(manage, tmp_path, live_env):
    command("user", "create", "frank")
    before = set(Path(live_env["REPO_ROOT"]).rglob("*.git"))
    missing = refusal("repo", "create", "frank/x", "--import", str(tmp_path / "missing"))
    assert "neither a URL nor an existing path" in missing
    result = manage("repo", "create", "frank/x", "--import", "http://127.0.0.1:9/nothing.git")
    assert result.returncode != 0 and "Import from" in result.stderr
    assert not Repository.objects.exists()
    assert set(Path(live_env["REPO_ROOT"]).rglob("*.git")) == before


def test_password_stdin_never_waits_for_a_terminal(manage):
    # stdin closed at once: an empty password is refused instead of prompting or hanging.
    result = manage("user", "create", "gina", "--password-stdin", stdin="")
    assert result.returncode != 0
    assert "password" in result.stderr.lower()
    assert not User.objects.filter(username="gina").exists()
