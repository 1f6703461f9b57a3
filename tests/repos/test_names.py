"""Name validation, and that a refused name creates nothing in the database or on disk."""

import pytest

from repos import services
from repos.errors import InvalidInput
from repos.models import Repository, User
from tests.factories import UserFactory

BAD_REPO_NAMES = [
    "",
    ".",
    "..",
    "../etc",
    "a/b",
    "/abs",
    "%2e%2e",
    "name%2fx",
    "has space",
    "tab\tname",
    "nul\x00byte",
    "newline\n",
    "del\x7f",
    "-leading-dash",
    ".hidden",
    "x..y",
    "repo.git",
    "REPO.GIT",
    "repo.lock",
    "\u0430pple",  # Cyrillic a
    "ﬁle",  # ligature
    "café",
    "zero\u200bwidth",
    "fullwidth\uff0fslash",
    "x" * 101,
    "x" * 300,
    "api",
    "Admin",
    "static",
    "login",
    "settings",
    "con",
]
GOOD_REPO_NAMES = ["hostsite", "my-project", "my_project", "v1.2.3", "A", "x" * 100, "_private", "dot.name"]


@pytest.mark.parametrize("name", GOOD_REPO_NAMES)
@pytest.mark.django_db
def test_good_repo_names_are_created(name, settings):
    owner = UserFactory()
    repo = services.repository_create(owner=owner, name=name)
    assert repo.disk_path.is_dir()
    assert Repository.objects.filter(owner=owner, name=name).exists()


@pytest.mark.parametrize("name", BAD_REPO_NAMES)
@pytest.mark.django_db
def test_bad_repo_names_create_nothing(name, settings):
    owner = UserFactory()
    before = sorted(p.name for p in settings.REPO_ROOT.rglob("*.git"))
    with pytest.raises(InvalidInput) as info:
        services.repository_create(owner=owner, name=name)
    assert info.value.fields.get("name")
    assert not Repository.objects.exists()
    assert sorted(p.name for p in settings.REPO_ROOT.rglob("*.git")) == before


@pytest.mark.django_db
def test_names_are_unique_per_owner_ignoring_case(settings):
    owner, other = UserFactory(), UserFactory()
    services.repository_create(owner=owner, name="Project")
    count = len(list(settings.REPO_ROOT.rglob("*.git")))
    with pytest.raises(services.Conflict):
        services.repository_create(owner=owner, name="project")
    assert len(list(settings.REPO_ROOT.rglob("*.git"))) == count
    # Another owner may use the same name.
    services.repository_create(owner=other, name="project")


BAD_USERNAMES = [
    "",
    "Alice",
    "al ice",
    "-alice",
    "alice-",
    "al--ice",
    "al.ice",
    "al/ice",
    "..",
    "\u0430lice",
    "a" * 40,
    "api",
    "admin",
    "login",
    "new",
    "settings",
    "static",
    "user_name",
]


@pytest.mark.parametrize("username", BAD_USERNAMES)
@pytest.mark.django_db
def test_bad_usernames_create_nothing(username):
    with pytest.raises(InvalidInput):
        services.user_create(username=username)
    assert not User.objects.exists()


@pytest.mark.django_db
def test_usernames_unique_ignoring_case():
    services.user_create(username="alice")
    with pytest.raises(services.Conflict):
        services.user_create(username="alice")
    # The database constraint also catches a differently-cased row that skipped validation.
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create(username="ALICE")
