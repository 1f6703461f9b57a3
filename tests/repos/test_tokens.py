from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from repos import services, tokens
from repos.errors import InvalidInput
from repos.models import AccessToken
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_secret_is_stored_only_as_sha256():
    user = UserFactory()
    token, secret = services.token_create(user=user, name="ci", scope="write")
    assert secret.startswith("hst_") and len(secret) == 44
    assert token.digest == tokens.digest(secret) != secret
    # Nothing in the table holds the secret itself.
    with connection.cursor() as cur:
        cur.execute("SELECT * FROM repos_accesstoken")
        rows = cur.fetchall()
    assert not any(secret in str(value) for row in rows for value in row)
    assert token.prefix == secret[:8]


def test_secrets_are_unique_and_random():
    user = UserFactory()
    secrets_ = {services.token_create(user=user)[1] for _ in range(50)}
    assert len(secrets_) == 50


def test_authenticate_with_secret_and_username():
    user = UserFactory(username="alice")
    token, secret = services.token_create(user=user, scope="read")
    assert tokens.authenticate_token(secret) == token
    assert tokens.authenticate_token(secret, username="ALICE") == token
    assert tokens.authenticate_token(secret, username="bob") is None
    assert tokens.authenticate_token(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None
    assert tokens.authenticate_token("not a token") is None
    assert tokens.authenticate_token("") is None


def test_scopes():
    user = UserFactory()
    read, _ = services.token_create(user=user, scope="read")
    write, _ = services.token_create(user=user, scope="write")
    assert not read.allows_write
    assert write.allows_write
    with pytest.raises(InvalidInput):
        services.token_create(user=user, scope="admin")


def test_revoked_token_no_longer_authenticates():
    user = UserFactory()
    token, secret = services.token_create(user=user, scope="write")
    services.token_revoke(token=token)
    first = AccessToken.objects.get(pk=token.pk).revoked_at
    assert first is not None
    assert tokens.authenticate_token(secret) is None
    services.token_revoke(token=token)
    assert AccessToken.objects.get(pk=token.pk).revoked_at == first


def test_expired_token_no_longer_authenticates():
    user = UserFactory()
    token, secret = services.token_create(user=user, expires_at=timezone.now() + timedelta(days=1))
    assert tokens.authenticate_token(secret) == token
    AccessToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert tokens.authenticate_token(secret) is None
    with pytest.raises(InvalidInput):
        services.token_create(user=user, expires_at=timezone.now() - timedelta(days=1))


def test_inactive_user_token_refused():
    user = UserFactory()
    _token, secret = services.token_create(user=user)
    user.is_active = False
    user.save()
    assert tokens.authenticate_token(secret) is None


def test_last_use_is_recorded_at_most_once_a_minute():
    user = UserFactory()
    token, secret = services.token_create(user=user)
    assert token.last_used_at is None
    tokens.authenticate_token(secret)
    first = AccessToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    tokens.authenticate_token(secret)
    assert AccessToken.objects.get(pk=token.pk).last_used_at == first
    AccessToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=5))
    tokens.authenticate_token(secret)
    assert AccessToken.objects.get(pk=token.pk).last_used_at > first - timedelta(minutes=5)
