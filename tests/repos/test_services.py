"""Repository creation, import, membership and maintenance, with real git on disk."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from gitcore import hookclient
from gitcore.git import git_version, run_git, supports_reftable
from repos import gitaccess, selectors, services, storage
from repos.errors import ImportFailed, InvalidInput
from repos.maintenance import maintain_repository
from repos.models import Repository, Role
from sources import importing
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git, make_history

pytestmark = pytest.mark.django_db


def imported_modules(source: str) -> set[str]:
    tree = ast.parse(source)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    return names


def config_get(path, key):
    return run_git(["config", "--get", key], repo=path).text.strip()


def refs_of(path):
    out = run_git(["for-each-ref", "--format=%(refname) %(objectname)"], repo=path).text
    return dict(line.split(" ", 1) for line in out.splitlines())


def test_created_repository_layout_and_configuration(settings):
    repo = RepositoryFactory()
    path = repo.disk_path
    assert path == settings.REPO_ROOT / storage.shard_for(repo.pk) / f"{repo.pk}.git"
    assert run_git(["rev-parse", "--is-bare-repository"], repo=path).text.strip() == "true"
    assert config_get(path, "receive.fsckObjects") == "true"
    assert config_get(path, "transfer.fsckObjects") == "true"
    assert config_get(path, "gc.auto") == "0"
    assert config_get(path, "receive.autogc") == "false"
    hooks = config_get(path, "core.hooksPath")
    assert hooks == str(storage.hooks_dir())
    client = (Path(hookclient.__file__)).read_text()
    for name in (*storage.HOOK_NAMES, *gitaccess.hook_handlers()):
        hook = storage.hooks_dir() / name
        assert hook.exists() and hook.stat().st_mode & 0o111
        # The standard library and the modules installed beside them only: never Django or the
        # project (an interpreter with -I -S runs them).
        siblings = {module.removesuffix(".py") for module in storage.HOOK_MODULES}
        assert imported_modules(hook.read_text()) <= set(sys.stdlib_module_names) | siblings
        # The hooks that decide are the client that relays to the process serving the push.
        assert (hook.read_text().split("\n", 1)[1] == client) == (name != "post-receive"), name
    for module in storage.HOOK_MODULES:
        assert imported_modules((storage.hooks_dir() / module).read_text()) <= set(
            sys.stdlib_module_names
        ) | {"__future__"}
    # The client imports built-in modules only (not even `socket`): its start-up is a hook's cost.
    assert imported_modules(client) <= {"os", "select", "sys", "_socket"}
    assert run_git(["symbolic-ref", "HEAD"], repo=path).text.strip() == "refs/heads/main"
    # No names on disk: only the id.
    assert repo.name not in str(path)


def test_ref_format_follows_git_version():
    repo = RepositoryFactory()
    expected = "reftable" if supports_reftable() else "files"
    if git_version() >= (2, 45, 0):
        assert storage.ref_format(repo.disk_path) == expected
    else:
        # git before 2.45 knows only the files backend (and has no --show-ref-format).
        assert (repo.disk_path / "refs").is_dir() and not (repo.disk_path / "reftable").exists()


def test_import_copies_every_ref_and_takes_head(source_repo):
    owner = UserFactory()
    expected = refs_of(source_repo / ".git")
    repo = importing.import_now(owner=owner, name="imported", source=str(source_repo)).repository
    assert refs_of(repo.disk_path) == expected
    assert set(expected) >= {"refs/heads/trunk", "refs/heads/feature", "refs/tags/v1.0"}
    assert repo.default_branch == "trunk"
    assert run_git(["symbolic-ref", "HEAD"], repo=repo.disk_path).text.strip() == "refs/heads/trunk"
    run_git(["fsck", "--strict"], repo=repo.disk_path)


def test_import_of_bad_source_leaves_nothing(tmp_path, settings):
    owner = UserFactory()
    not_a_repo = tmp_path / "empty-dir"
    not_a_repo.mkdir()
    before = set(settings.REPO_ROOT.rglob("*.git"))
    with pytest.raises(ImportFailed):
        importing.import_now(owner=owner, name="broken", source=str(not_a_repo))
    with pytest.raises(InvalidInput):
        importing.import_now(owner=owner, name="broken", source=str(tmp_path / "missing"))
    with pytest.raises(InvalidInput):
        importing.import_now(owner=owner, name="broken", source="ext::sh -c touch% /tmp/pwned")
    assert not Repository.objects.filter(name="broken").exists()
    assert set(settings.REPO_ROOT.rglob("*.git")) == before
    assert not list(settings.REPO_ROOT.rglob(".tmp-*"))


def test_import_refuses_corrupt_objects(tmp_path, git_home):
    """The object checks: a commit without an author line is refused on import (the checks accept
    legacy formatting such as a malformed date, but not a commit git cannot attribute)."""
    src = tmp_path / "bad"
    git(git_home, "init", "--quiet", "--bare", str(src))
    tree = subprocess.run(
        ["git", "--git-dir", str(src), "mktree"],
        input="",
        capture_output=True,
        text=True,
        env=git_home,
        check=True,
    ).stdout.strip()
    bad_commit = f"tree {tree}\ncommitter x <x@y> 0 +0000\n\nbad\n"
    sha = subprocess.run(
        ["git", "--git-dir", str(src), "hash-object", "-t", "commit", "-w", "--literally", "--stdin"],
        input=bad_commit,
        capture_output=True,
        text=True,
        env=git_home,
        check=True,
    ).stdout.strip()
    git(git_home, "--git-dir", str(src), "update-ref", "refs/heads/main", sha)
    with pytest.raises(ImportFailed, match="missingAuthor"):
        importing.import_now(owner=UserFactory(), name="corrupt", source=str(src))
    assert not Repository.objects.filter(name="corrupt").exists()


def test_orphaned_directory_at_new_id_is_set_aside_not_deleted(settings):
    first = RepositoryFactory()
    next_path = storage.repository_path(first.pk + 1)
    next_path.mkdir(parents=True)
    (next_path / "precious").write_text("left by a crash")
    second = RepositoryFactory()
    assert second.pk == first.pk + 1
    assert (second.disk_path / "HEAD").exists()
    kept = list((settings.REPO_ROOT / ".orphaned").glob(f"{second.pk}-*.git/precious"))
    assert kept and kept[0].read_text() == "left by a crash"


def test_default_branch_validation():
    owner = UserFactory()
    for bad in ["", "a..b", "has space", "x.lock", "-x", "a" * 300, "tab\t"]:
        with pytest.raises(InvalidInput):
            services.repository_create(owner=owner, name="r", default_branch=bad)
    repo = services.repository_create(owner=owner, name="r", default_branch="trunk")
    assert run_git(["symbolic-ref", "HEAD"], repo=repo.disk_path).text.strip() == "refs/heads/trunk"
    services.repository_update(repo=repo, default_branch="develop")
    assert run_git(["symbolic-ref", "HEAD"], repo=repo.disk_path).text.strip() == "refs/heads/develop"


def test_roles_and_visibility():
    owner, reader, maintainer, stranger = UserFactory(), UserFactory(), UserFactory(), UserFactory()
    staff = UserFactory(is_staff=True)
    private = RepositoryFactory(owner=owner, visibility="private")
    public = RepositoryFactory(owner=owner)
    services.membership_set(repo=private, user=reader, role=Role.READER)
    services.membership_set(repo=private, user=maintainer, role=Role.MAINTAINER)
    assert selectors.role_for(owner, private) == Role.ADMIN
    assert selectors.role_for(reader, private) == Role.READER
    assert selectors.role_for(maintainer, private) == Role.MAINTAINER
    assert selectors.role_for(stranger, private) is None
    assert selectors.can_read(reader, private) and selectors.can_read(staff, private)
    assert not selectors.can_read(stranger, private)
    from django.contrib.auth.models import AnonymousUser

    assert not selectors.can_read(AnonymousUser(), private)
    assert selectors.can_read(AnonymousUser(), public)
    assert set(selectors.visible_repositories(stranger)) == {public}
    assert set(selectors.visible_repositories(reader)) == {public, private}
    assert set(selectors.visible_repositories(None)) == {public}
    with pytest.raises(InvalidInput):
        services.membership_set(repo=private, user=owner, role=Role.READER)
    services.membership_set(repo=private, user=reader, role=Role.ADMIN)
    assert selectors.can_admin(reader, private)
    assert services.membership_remove(repo=private, user=reader)
    assert selectors.role_for(reader, private) is None


def test_maintenance_writes_bitmap_and_commit_graph(tmp_path, git_home):
    src = tmp_path / "src"
    make_history(src, git_home)
    repo = importing.import_now(owner=UserFactory(), name="m", source=str(src)).repository
    Repository.objects.filter(pk=repo.pk).update(pushes_since_maintenance=3)
    repo.refresh_from_db()

    def loose_refs():
        return [p for p in (repo.disk_path / "refs").rglob("*") if p.is_file()]

    files_backend = not supports_reftable()
    run_git(["update-ref", "refs/tags/loose", "HEAD"], repo=repo.disk_path)  # as a push leaves it
    assert loose_refs() or not files_backend
    result = maintain_repository(repo)
    assert result.ran
    objects = repo.disk_path / "objects"
    assert list((objects / "pack").glob("*.bitmap"))
    assert (objects / "info" / "commit-graph").exists() or (objects / "info" / "commit-graphs").exists()
    if files_backend:  # refs packed, as git's gc leaves them
        assert not loose_refs()
        assert "refs/tags/loose" in (repo.disk_path / "packed-refs").read_text()
    repo.refresh_from_db()
    assert repo.last_maintained_at is not None
    assert repo.pushes_since_maintenance == 0
    assert repo.maintenance_claimed_at is None
    run_git(["fsck", "--strict"], repo=repo.disk_path)


def test_maintenance_runs_one_at_a_time(tmp_path):
    repo = RepositoryFactory()
    from repos import locking

    with locking.claim("maintenance", repo.pk):
        assert not maintain_repository(repo).ran
