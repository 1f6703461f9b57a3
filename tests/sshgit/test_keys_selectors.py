"""sshgit.selectors: which keys may log in (one query each), and the SSH clone URL's forms."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from django.utils import timezone

from sshgit import selectors, services
from tests.factories import RepositoryFactory, UserFactory
from tests.sshgit.keygen import ed25519_line

pytestmark = pytest.mark.django_db


@pytest.fixture
def keys():
    alice = UserFactory(username="alice")
    repo = RepositoryFactory(owner=alice, name="proj")
    mine = services.add_user_key(alice, title="laptop", text=ed25519_line())
    deploy = services.add_deploy_key(repo, acting_user=alice, title="ci", text=ed25519_line())
    return alice, repo, mine, deploy


def test_usable_and_session_keys_in_one_query_each(keys, django_assert_num_queries):
    _alice, _repo, mine, deploy = keys
    for key in (mine, deploy):
        with django_assert_num_queries(1):
            found = selectors.usable_key(key.fingerprint)
            # The owner comes with it: no second query to say who logged in.
            owner = found.user.username if found.user else found.repository.owner.username
            creator = found.created_by.username
        assert found == key and owner == creator == "alice"
        with django_assert_num_queries(1):
            found = selectors.session_key(key.pk)
            owner = found.user.username if found.user else found.repository.owner.username
        assert found == key and owner == "alice"
        assert selectors.session_key(str(key.pk)) == key


def test_unknown_and_malformed_keys_are_none(keys):
    assert selectors.usable_key("SHA256:nope") is None
    assert selectors.usable_key("MD5:aa:bb") is None
    assert selectors.usable_key(None) is None  # type: ignore[arg-type]
    for bad in (999_999, 0, -1, "key-1", None, "1; drop"):
        assert selectors.session_key(bad) is None  # type: ignore[arg-type]


def test_a_deactivated_user_s_keys_stop_working(keys):
    alice, _repo, mine, deploy = keys
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert selectors.usable_key(mine.fingerprint) is None
    assert selectors.session_key(mine.pk) is None
    # The repository's deploy key is the repository's, not the person's who added it.
    assert selectors.usable_key(deploy.fingerprint) == deploy


def test_a_deleted_repository_s_deploy_keys_stop_working(keys):
    _alice, repo, mine, deploy = keys
    repo.deleted_at = timezone.now()
    repo.save(update_fields=["deleted_at"])
    assert selectors.usable_key(deploy.fingerprint) is None
    assert selectors.session_key(deploy.pk) is None
    assert selectors.usable_key(mine.fingerprint) == mine


def test_lists(keys):
    alice, repo, mine, deploy = keys
    assert list(selectors.keys_of(alice)) == [mine]
    assert list(selectors.deploy_keys_of(repo)) == [deploy]


@pytest.fixture
def repo():
    return RepositoryFactory(owner=UserFactory(username="olga"), name="demo")


def _url(settings, repo, host="hub.example:8000", **ssh):
    settings.ALLOWED_HOSTS = ["*"]
    settings.SSH_PORT = ssh.get("port", 2222)
    settings.SSH_PUBLIC_PORT = ssh.get("public_port", settings.SSH_PORT)
    settings.SSH_HOST = ssh.get("ssh_host", "")
    settings.SSH_USER = ssh.get("user", "git")
    return selectors.ssh_clone_url(RequestFactory().get("/", HTTP_HOST=host), repo)


def test_ssh_clone_url_forms(settings, repo):
    assert _url(settings, repo, port=0) is None
    assert _url(settings, repo) == "ssh://git@hub.example:2222/olga/demo.git"
    assert _url(settings, repo, host="hub.example") == "ssh://git@hub.example:2222/olga/demo.git"
    assert _url(settings, repo, host="[::1]:8000") == "ssh://git@[::1]:2222/olga/demo.git"
    assert _url(settings, repo, host="127.0.0.1:8000", user="me") == "ssh://me@127.0.0.1:2222/olga/demo.git"
    assert _url(settings, repo, host="x:1", ssh_host="git.example.org") == (
        "ssh://git@git.example.org:2222/olga/demo.git"
    )
    # Behind a proxy on port 22: the short scp form.
    assert _url(settings, repo, public_port=22) == "git@hub.example:olga/demo.git"
    assert _url(settings, repo, public_port=22, host="[::1]:8000") == "git@[::1]:olga/demo.git"
    assert _url(settings, repo, public_port=2200, host="a.b") == "ssh://git@a.b:2200/olga/demo.git"
    settings.SSH_HOST = "::1"  # an IPv6 SSH_HOST gets its brackets too
    assert selectors.ssh_clone_url(RequestFactory().get("/"), repo) == "ssh://git@[::1]:2200/olga/demo.git"
