"""Server-rendered pages: accounts, tokens, repositories; escaping and 404s for private ones."""

import re

import pytest
from django.test import Client

from repos import services, tokens
from repos.models import AccessToken, Membership, Repository, User
from sources import importing
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git

pytestmark = pytest.mark.django_db
PASSWORD = "long-enough-passphrase-42"


def signed_in(username="alice", **extra) -> tuple[Client, User]:
    user = UserFactory(username=username, **extra)
    client = Client()
    client.force_login(user)
    return client, user


def test_signup_logs_in_and_normalises_username():
    client = Client()
    response = client.post(
        "/signup",
        {"username": " Alice ", "email": "a@example.invalid", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    user = User.objects.get(username="alice")
    assert user.check_password(PASSWORD)
    assert "alice" in client.get("/").content.decode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"username": "api", "password1": PASSWORD, "password2": PASSWORD}, "reserved"),
        ({"username": "bad name", "password1": PASSWORD, "password2": PASSWORD}, "Usernames use"),
        ({"username": "bob", "password1": PASSWORD, "password2": PASSWORD + "x"}, "differ"),
        ({"username": "bob", "password1": "123", "password2": "123"}, "too short"),
    ],
)
def test_signup_errors_create_nothing(data, message):
    response = Client().post("/signup", data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not User.objects.exists()


def test_login_logout():
    user = UserFactory(username="carol")
    user.set_password(PASSWORD)
    user.save()
    client = Client()
    assert client.post("/login", {"username": "CAROL", "password": PASSWORD}).status_code == 302
    assert "Sign out" in client.get("/").content.decode()
    assert client.get("/logout").status_code == 405  # logging out is a POST (no CSRF logout)
    assert client.post("/logout").status_code == 302
    assert "Sign in" in client.get("/").content.decode()
    assert client.post("/login", {"username": "carol", "password": "wrong"}).status_code == 200
    assert "_auth_user_id" not in client.session


def test_pages_need_login():
    client = Client()
    for url in ["/new", "/settings/tokens", "/settings/profile"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login?next=")


def test_token_is_shown_once_and_revocable():
    client, user = signed_in()
    response = client.post("/settings/tokens", {"name": "laptop", "scope": "write"}, follow=True)
    page = response.content.decode()
    secret = re.search(r'value="(hst_[A-Za-z0-9_-]{40})"', page)[1]
    token = AccessToken.objects.get(digest=tokens.digest(secret))
    assert token.scope == "write" and token.name == "laptop"
    assert secret not in client.get("/settings/tokens").content.decode()
    client.post(f"/settings/tokens/{token.pk}/revoke")
    token.refresh_from_db()
    assert token.revoked_at is not None
    other, _ = signed_in("mallory")
    mine, _ = services.token_create(user=user)
    assert other.post(f"/settings/tokens/{mine.pk}/revoke").status_code == 404
    mine.refresh_from_db()
    assert mine.revoked_at is None


def test_profile_settings():
    client, user = signed_in()
    response = client.post("/settings/profile", {"display_name": "Alice A.", "email": "", "bio": "hi"})
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.display_name == "Alice A."
    assert "Alice A." in Client().get("/alice").content.decode()
    assert Client().get("/nobody-here").status_code == 404


def test_profile_settings_commit_identity():
    client, user = signed_in()
    page = client.get("/settings/profile").content.decode()
    assert 'name="commit_name"' in page and 'name="commit_email"' in page
    base = {"display_name": "", "email": "", "bio": ""}
    response = client.post("/settings/profile", {**base, "commit_name": "Alice <evil>", "commit_email": ""})
    assert response.status_code == 200 and "may not contain &lt;, &gt;" in response.content.decode()
    user.refresh_from_db()
    assert user.commit_name == ""
    identity = {"commit_name": "Alice Liddell", "commit_email": "alice@wonderland.example"}
    assert client.post("/settings/profile", {**base, **identity}).status_code == 302
    user.refresh_from_db()
    assert (user.commit_name, user.commit_email) == ("Alice Liddell", "alice@wonderland.example")


def test_new_repository_form():
    client, _user = signed_in()
    response = client.post(
        "/new", {"name": "proj", "description": "", "visibility": "private", "default_branch": "main"}
    )
    assert response.status_code == 302 and response["Location"] == "/alice/proj"
    page = client.get("/alice/proj").content.decode()
    assert "This repository is empty" in page
    assert "http://testserver/alice/proj.git" in page
    for bad in ["../x", "api", "a b", "x" * 300, "PROJ"]:
        response = client.post("/new", {"name": bad, "visibility": "public", "default_branch": "main"})
        assert response.status_code == 400, bad
        assert 'class="error"' in response.content.decode()
    assert Repository.objects.count() == 1


def test_repository_page_escapes_everything(tmp_path, git_home):
    src = tmp_path / "src"
    git(git_home, "init", "--quiet", "-b", "main", str(src))
    (src / "f").write_text("x")
    git(git_home, "add", "f", cwd=src)
    git(git_home, "commit", "--quiet", "-m", "<script>alert('subject')</script>", cwd=src)
    git(git_home, "tag", "v1", cwd=src)
    owner = UserFactory(username="dana")
    importing.import_now(
        owner=owner, name="xss", source=str(src), description='<img src=x onerror="alert(1)">'
    )
    page = Client().get("/dana/xss").content.decode()
    assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(&#x27;subject&#x27;)&lt;/script&gt;" in page
    assert '<img src=x onerror="alert(1)">' not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert "v1" in page
    assert (
        "git clone --bundle-uri=http://testserver/dana/xss.git/bundle-list http://testserver/dana/xss.git"
        in page
    )


def test_private_repository_is_404_for_outsiders():
    owner = UserFactory(username="erin")
    RepositoryFactory(owner=owner, name="hidden-repo-xyz", visibility="private")
    assert Client().get("/erin/hidden-repo-xyz").status_code == 404
    outsider, _ = signed_in("frank")
    assert outsider.get("/erin/hidden-repo-xyz").status_code == 404
    assert outsider.get("/erin/hidden-repo-xyz/settings").status_code == 404
    assert outsider.get("/erin/does-not-exist").status_code == 404
    owner_client = Client()
    owner_client.force_login(owner)
    assert owner_client.get("/erin/hidden-repo-xyz").status_code == 200
    assert "hidden-repo-xyz" not in Client().get("/").content.decode()
    assert "hidden-repo-xyz" not in Client().get("/erin").content.decode()


def test_repository_urls_are_canonical():
    owner = UserFactory(username="gus")
    RepositoryFactory(owner=owner, name="Proj")
    client = Client()
    assert client.get("/gus/Proj").status_code == 200
    for variant in ["/GUS/proj", "/gus/Proj.git", "/gus/Proj/"]:
        response = client.get(variant)
        assert response.status_code in (301, 302) and response["Location"] == "/gus/Proj", variant


def test_settings_page_is_admin_only_and_manages_members():
    client, owner = signed_in("hana")
    RepositoryFactory(owner=owner, name="p")
    UserFactory(username="ivan")
    assert client.get("/hana/p/settings").status_code == 200
    client.post("/hana/p/settings/members", {"username": "ivan", "role": "maintainer"})
    assert "<td>maintainer</td>" in client.get("/hana/p/settings").content.decode()
    ivan = Client()
    ivan.force_login(User.objects.get(username="ivan"))
    assert ivan.get("/hana/p/settings").status_code == 404
    response = client.post(
        "/hana/p/settings", {"description": "new", "visibility": "private", "default_branch": "main"}
    )
    assert response.status_code == 302
    assert Repository.objects.get(name="p").visibility == "private"
    client.post("/hana/p/settings/members/ivan/remove")
    assert "<td>maintainer</td>" not in client.get("/hana/p/settings").content.decode()
    assert not Membership.objects.exists()


def test_home_lists_public_repositories():
    RepositoryFactory(owner=UserFactory(username="jo"), name="visible-one")
    page = Client().get("/").content.decode()
    assert "visible-one" in page and "Contribute without forking" in page
