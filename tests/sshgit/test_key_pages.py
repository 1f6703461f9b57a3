"""The key pages through Django's test client: /settings/keys, a repository's deploy keys,
/help/ssh, and the SSH choice in the repository page's clone box."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from django.test import Client

from repos import services as repo_services
from repos.models import Role, Visibility
from sshgit import services
from sshgit.models import PublicKey
from tests.factories import RepositoryFactory, UserFactory
from tests.sshgit.keygen import ed25519_line, fingerprint_by_ssh_keygen, keygen

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _ssh_on(settings):
    settings.SSH_PORT = 2222
    settings.SSH_PUBLIC_PORT = 2222
    settings.SSH_HOST = ""
    settings.SSH_USER = "git"


@pytest.fixture
def alice():
    return UserFactory(username="alice")


def signed_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def test_keys_page_needs_sign_in():
    response = Client().get("/settings/keys")
    assert response.status_code == 302 and response["Location"].startswith("/login")


def test_add_list_and_delete_a_key(alice):
    client = signed_in(alice)
    page = client.get("/settings/keys")
    assert page.status_code == 200 and b"No SSH keys yet." in page.content
    assert b'href="/settings/keys"' in page.content  # the site navigation links here
    line = ed25519_line("alice@laptop")
    response = client.post("/settings/keys", {"title": "", "key": line})
    assert response.status_code == 302 and response["Location"] == "/settings/keys"
    key = PublicKey.objects.get(user=alice)
    page = client.get("/settings/keys").content.decode()
    assert "alice@laptop" in page and key.fingerprint in page and "256 bits" in page and "never" in page
    assert "added (" in page  # the success message names the fingerprint

    # Deleting asks first: a POST without the confirmation shows the question and keeps the key.
    ask = client.post(f"/settings/keys/{key.pk}/delete")
    assert ask.status_code == 200 and b"Delete your SSH key?" in ask.content
    assert PublicKey.objects.filter(pk=key.pk).exists()
    assert client.get(f"/settings/keys/{key.pk}/delete").status_code == 405
    done = client.post(f"/settings/keys/{key.pk}/delete", {"confirm": "yes"})
    assert done.status_code == 302 and not PublicKey.objects.filter(pk=key.pk).exists()


def test_refusals_are_shown_next_to_the_field(alice):
    client = signed_in(alice)
    response = client.post("/settings/keys", {"title": "t", "key": "ssh-dss AAAA"})
    assert response.status_code == 400
    assert "DSA keys (ssh-dss) are not accepted" in unescape(response.content.decode())
    line = ed25519_line()
    services.add_user_key(UserFactory(username="bob"), title="bob", text=line)
    taken = client.post("/settings/keys", {"title": "t", "key": line})
    assert taken.status_code == 400 and b"This key is already in use" in taken.content
    assert b"bob" not in taken.content
    assert not PublicKey.objects.filter(user=alice).exists()


def test_titles_are_escaped(alice):
    client = signed_in(alice)
    client.post("/settings/keys", {"title": "<script>alert(1)</script>", "key": ed25519_line()})
    page = client.get("/settings/keys").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_forms_need_the_csrf_token(alice):
    client = signed_in(alice, enforce_csrf_checks=True)
    assert client.post("/settings/keys", {"title": "t", "key": ed25519_line()}).status_code == 403
    key = services.add_user_key(alice, title="k", text=ed25519_line())
    refused = client.post(f"/settings/keys/{key.pk}/delete", {"confirm": "yes"})
    assert refused.status_code == 403 and PublicKey.objects.filter(pk=key.pk).exists()
    page = client.get("/settings/keys").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    ok = client.post("/settings/keys", {"title": "t", "key": ed25519_line(), "csrfmiddlewaretoken": token})
    assert ok.status_code == 302


def test_another_user_s_key_is_404(alice):
    key = services.add_user_key(alice, title="k", text=ed25519_line())
    bob = signed_in(UserFactory(username="bob"))
    assert bob.post(f"/settings/keys/{key.pk}/delete", {"confirm": "yes"}).status_code == 404
    assert bob.post("/settings/keys/999999/delete", {"confirm": "yes"}).status_code == 404
    assert PublicKey.objects.filter(pk=key.pk).exists()


@pytest.fixture
def project(alice):
    repo = RepositoryFactory(owner=alice, name="proj", visibility=Visibility.PRIVATE)
    reader = UserFactory(username="rita")
    repo_services.membership_set(repo=repo, user=reader, role=Role.from_label("reader"))
    return repo


def test_deploy_keys_page_for_admins_only(alice, project):
    url = "/alice/proj/settings/keys"
    assert signed_in(UserFactory(username="rita")).get(url).status_code == 404
    assert signed_in(UserFactory(username="otto")).get(url).status_code == 404
    assert signed_in(UserFactory(username="sam", is_staff=True)).get(url).status_code == 200
    client = signed_in(alice)
    page = client.get(url)
    assert page.status_code == 200 and b"No deploy keys yet." in page.content
    assert b"ssh://git@testserver:2222/alice/proj.git" in page.content
    settings_page = client.get("/alice/proj/settings").content.decode()
    assert f'href="{url}"' in settings_page

    response = client.post(url, {"title": "<b>ci</b>", "key": ed25519_line(), "read_write": "on"})
    assert response.status_code == 302
    key = PublicKey.objects.get(repository=project)
    assert key.read_write and key.created_by == alice
    page = client.get(url).content.decode()
    assert "read-write" in page and "&lt;b&gt;ci&lt;/b&gt;" in page and "<b>ci</b>" not in page
    # A reader cannot delete it, even knowing its id.
    rita = signed_in(UserFactory(username="rita"))
    assert rita.post(f"{url}/{key.pk}/delete", {"confirm": "yes"}).status_code == 404
    other = RepositoryFactory(owner=alice, name="other")
    assert client.post(f"/alice/other/settings/keys/{key.pk}/delete", {"confirm": "yes"}).status_code == 404
    assert other.deploy_keys.count() == 0
    assert client.post(f"{url}/{key.pk}/delete").status_code == 200  # the question
    assert client.post(f"{url}/{key.pk}/delete", {"confirm": "yes"}).status_code == 302
    assert not PublicKey.objects.filter(pk=key.pk).exists()


def test_help_page_when_ssh_is_off(settings):
    settings.SSH_PORT = 0
    page = Client().get("/help/ssh")
    assert page.status_code == 200 and b"SSH is turned off on this site" in page.content
    assert b"ssh -T" not in page.content


def test_help_page_without_host_keys_says_ssh_is_not_running(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    page = Client().get("/help/ssh").content.decode()
    assert "SSH is not running on this server yet" in page
    assert "ssh -T -p 2222 git@testserver" in page
    assert "git clone ssh://git@testserver:2222/OWNER/NAME.git" in page


def test_help_page_shows_the_host_key_fingerprints(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    (tmp_path / "ssh").mkdir()
    for kind in ("ed25519", "ecdsa"):
        keygen(["-q", "-N", "", "-t", kind, "-f", str(tmp_path / "ssh" / f"ssh_host_{kind}_key")])
    (tmp_path / "ssh" / "ssh_host_bad_key.pub").write_text("not a key\n")
    page = Client().get("/help/ssh").content.decode()
    assert "not running" not in page
    for kind in ("ed25519", "ecdsa"):
        pub = tmp_path / "ssh" / f"ssh_host_{kind}_key.pub"
        assert fingerprint_by_ssh_keygen(Path(pub))[1] in page
        assert f"[testserver]:2222 {' '.join(pub.read_text().split()[:2])}" in page


def test_repository_page_offers_ssh_beside_http(settings, alice):
    RepositoryFactory(owner=alice, name="pub")
    client = signed_in(alice)
    page = client.get("/alice/pub").content.decode()
    assert 'value="http://testserver/alice/pub.git"' in page and "Clone over HTTP" in page
    assert 'href="?clone=ssh"' in page and 'href="/help/ssh"' in page
    page = client.get("/alice/pub?clone=ssh").content.decode()
    assert 'value="ssh://git@testserver:2222/alice/pub.git"' in page and "Clone over SSH" in page
    assert "git remote add origin ssh://git@testserver:2222/alice/pub.git" in page  # snippets follow it
    # Someone with a key gets SSH first; ?clone=http still chooses HTTP.
    services.add_user_key(alice, title="k", text=ed25519_line())
    assert 'value="ssh://git@testserver:2222/alice/pub.git"' in client.get("/alice/pub").content.decode()
    assert 'value="http://testserver/alice/pub.git"' in client.get("/alice/pub?clone=http").content.decode()
    settings.SSH_PORT = 0
    page = client.get("/alice/pub?clone=ssh").content.decode()
    assert 'href="?clone=ssh"' not in page and "ssh://" not in page
    assert 'value="http://testserver/alice/pub.git"' in page
