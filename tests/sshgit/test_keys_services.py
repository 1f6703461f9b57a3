"""sshgit.services: adding and removing people's and deploy keys, with their uniqueness across
the site, limits, audit rows and notifications; and touch_last_used."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from notifications.models import Notification
from repos import services as repo_services
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.models import AuditEntry, Role
from sshgit import services
from sshgit.models import PublicKey
from tests.factories import RepositoryFactory, UserFactory
from tests.sshgit.keygen import ed25519_line

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice():
    return UserFactory(username="alice")


@pytest.fixture
def repo(alice):
    return RepositoryFactory(owner=alice, name="proj")


def _fill(n: int, **owner) -> None:
    PublicKey.objects.bulk_create(
        PublicKey(
            title=f"k{i}",
            key_type="ssh-ed25519",
            key_data="AAAA",
            fingerprint=f"SHA256:fill{owner}{i}",
            **owner,
        )
        for i in range(n)
    )


def test_add_user_key_stores_audits_and_notifies(alice):
    key = services.add_user_key(alice, title="  laptop  ", text=ed25519_line("me@laptop"))
    key.refresh_from_db()
    assert (key.user, key.created_by, key.title, key.key_type, key.bits) == (
        alice,
        alice,
        "laptop",
        "ssh-ed25519",
        256,
    )
    assert key.fingerprint.startswith("SHA256:") and key.repository is None and not key.read_write
    audit = AuditEntry.objects.get(action="ssh_key_add")
    assert (audit.actor, audit.target_user, audit.repository) == (alice, alice, None)
    assert audit.detail == {"title": "laptop", "fingerprint": key.fingerprint, "key_type": "ssh-ed25519"}
    note = Notification.objects.get(user=alice, kind="ssh_key")
    assert key.fingerprint in note.text and "added" in note.text and note.url == "/settings/keys"


def test_a_key_is_in_use_wherever_it_is_and_the_message_says_not_whose(alice, repo):
    bob = UserFactory(username="bob")
    line = ed25519_line("shared")
    services.add_user_key(alice, title="mine", text=line)
    attempts = [
        lambda: services.add_user_key(alice, title="again", text=line),
        lambda: services.add_user_key(bob, title="bob's", text="  " + line.replace(" ", "\t", 1)),
        lambda: services.add_deploy_key(repo, acting_user=alice, title="deploy", text=line),
    ]
    for attempt in attempts:
        with pytest.raises(Conflict) as refused:
            attempt()
        assert refused.value.message == "This key is already in use"
        assert refused.value.code == "key_in_use" and refused.value.fields == {"key": [services.KEY_IN_USE]}
    assert PublicKey.objects.count() == 1
    # ...and a deploy key blocks a person's key the same way.
    deploy_line = ed25519_line()
    services.add_deploy_key(repo, acting_user=alice, title="ci", text=deploy_line)
    with pytest.raises(Conflict, match=r"^This key is already in use$"):
        services.add_user_key(bob, title="x", text=deploy_line)
    assert AuditEntry.objects.filter(action="ssh_key_add").count() == 1


def test_titles(alice):
    assert services.add_user_key(alice, title="", text=ed25519_line("me@host")).title == "me@host"
    for title, line, message in [
        ("", ed25519_line(), "Give the key a title."),
        ("   ", ed25519_line(), "Give the key a title."),
        ("x" * 101, ed25519_line(), "Titles are at most 100 characters."),
        ("bad\x07bell", ed25519_line(), "Titles may not contain control characters."),
        ("evil\u202etxt.exe", ed25519_line(), "Titles may not contain control characters."),
    ]:
        with pytest.raises(InvalidInput) as refused:
            services.add_user_key(alice, title=title, text=line)
        assert refused.value.message == message and list(refused.value.fields) == ["title"]
    assert services.add_user_key(alice, title="y" * 100, text=ed25519_line()).title == "y" * 100


def test_a_bad_key_names_the_key_field(alice):
    with pytest.raises(InvalidInput) as refused:
        services.add_user_key(alice, title="t", text="ssh-dss AAAA")
    assert refused.value.fields["key"][0].startswith("DSA keys")
    assert not PublicKey.objects.exists() and not AuditEntry.objects.exists()


def test_at_most_100_keys_per_person_and_50_deploy_keys(alice, repo):
    _fill(99, user=alice)
    services.add_user_key(alice, title="100th", text=ed25519_line())
    with pytest.raises(Conflict, match="100 keys, the most allowed"):
        services.add_user_key(alice, title="101st", text=ed25519_line())
    _fill(50, repository=repo)
    with pytest.raises(Conflict, match="50 deploy keys, the most allowed"):
        services.add_deploy_key(repo, acting_user=alice, title="51st", text=ed25519_line())
    # The limits are per owner: another repository still takes keys.
    other = RepositoryFactory(owner=alice, name="other")
    assert (
        services.add_deploy_key(other, acting_user=alice, title="ok", text=ed25519_line()).repository == other
    )


def test_remove_user_key_only_ones_own(alice):
    bob = UserFactory(username="bob")
    key = services.add_user_key(alice, title="laptop", text=ed25519_line())
    with pytest.raises(NotFound):
        services.remove_user_key(bob, key.pk)
    with pytest.raises(NotFound):
        services.remove_user_key(alice, 999_999)
    assert PublicKey.objects.filter(pk=key.pk).exists()
    services.remove_user_key(alice, key.pk)
    assert not PublicKey.objects.filter(pk=key.pk).exists()
    audit = AuditEntry.objects.get(action="ssh_key_remove")
    assert audit.detail["fingerprint"] == key.fingerprint and audit.target_user == alice
    assert Notification.objects.filter(user=alice, kind="ssh_key", text__contains="removed").count() == 1


def test_deploy_keys_are_managed_by_admins_and_staff_and_admins_are_told(alice, repo):
    admin, maint, reader = (UserFactory(username=n) for n in ("adam", "maud", "rita"))
    for user, role in ((admin, "admin"), (maint, "maintainer"), (reader, "reader")):
        repo_services.membership_set(repo=repo, user=user, role=Role.from_label(role))
    staff = UserFactory(username="sam", is_staff=True)
    for outsider in (maint, reader, UserFactory(username="otto")):
        with pytest.raises(Forbidden):
            services.add_deploy_key(repo, acting_user=outsider, title="x", text=ed25519_line())
    key = services.add_deploy_key(repo, acting_user=admin, title="ci", text=ed25519_line(), read_write=True)
    assert (key.repository, key.user, key.created_by, key.read_write) == (repo, None, admin, True)
    told = set(Notification.objects.filter(kind="deploy_key").values_list("user__username", flat=True))
    assert told == {"alice", "adam"}
    note = Notification.objects.filter(kind="deploy_key").first()
    assert "read-write deploy key 'ci'" in note.text and note.repository == repo
    assert note.url == "/alice/proj/settings/keys"
    audit = AuditEntry.objects.get(action="deploy_key_add")
    assert (audit.actor, audit.repository, audit.detail["read_write"]) == (admin, repo, True)

    staff_key = services.add_deploy_key(repo, acting_user=staff, title="by staff", text=ed25519_line())
    assert not staff_key.read_write
    with pytest.raises(Forbidden):
        services.remove_deploy_key(repo, acting_user=reader, key_id=key.pk)
    other = RepositoryFactory(owner=alice, name="other")
    with pytest.raises(NotFound):
        services.remove_deploy_key(other, acting_user=alice, key_id=key.pk)
    services.remove_deploy_key(repo, acting_user=staff, key_id=key.pk)
    assert list(PublicKey.objects.filter(repository=repo)) == [staff_key]
    removed = AuditEntry.objects.get(action="deploy_key_remove")
    assert (removed.actor, removed.detail["fingerprint"]) == (staff, key.fingerprint)


def test_no_deploy_keys_on_a_deleted_repository(alice, repo):
    repo.deleted_at = timezone.now()
    repo.save(update_fields=["deleted_at"])
    with pytest.raises(Forbidden):
        services.add_deploy_key(repo, acting_user=alice, title="x", text=ed25519_line())


def test_touch_last_used_writes_at_most_once_a_minute(alice):
    key = services.add_user_key(alice, title="k", text=ed25519_line())
    assert services.touch_last_used(key) is True
    first = PublicKey.objects.get(pk=key.pk).last_used_at
    assert first is not None and key.last_used_at == first
    assert services.touch_last_used(key) is False
    assert PublicKey.objects.get(pk=key.pk).last_used_at == first
    PublicKey.objects.filter(pk=key.pk).update(last_used_at=first - timedelta(minutes=2))
    assert services.touch_last_used(key) is True
    assert PublicKey.objects.get(pk=key.pk).last_used_at > first - timedelta(minutes=1)
