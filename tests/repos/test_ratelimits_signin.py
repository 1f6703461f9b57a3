"""Sign-in limits against the real server, as an attacker would meet them: a thousand wrong
passwords from one address in under a minute, one wrong password each from many addresses
against one account, the API's password path beside the form, and a window that ends."""

from __future__ import annotations

import base64
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.factories import UserFactory
from tests.repos.ratelimit_support import (
    SignInForm,
    limited_web,
    random_address,
    request,
    signed_in,
    window_turned,
)

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
PASSWORD = "long-enough-passphrase-42"
DAY = 86400
# Small limits: each password the server checks costs it a PBKDF2 hash (~0.5 s here).
PER_ADDRESS, PER_ACCOUNT = 5, 8
SPREAD = 2 * PER_ACCOUNT  # guesses from as many addresses


@pytest.fixture(scope="module")
def server(live_env, tmp_path_factory):
    with limited_web(
        live_env,
        tmp_path_factory.mktemp("web-logs"),
        signin_address=f"{PER_ADDRESS}/d",
        signin_account=f"{PER_ACCOUNT}/d",
    ) as url:
        yield url


def make_user(prefix: str):
    # Names of their own: the counts outlive the test database, in a cache shared by runs.
    user = UserFactory(username=f"{prefix}-{uuid.uuid4().hex[:10]}")
    user.set_password(PASSWORD)
    user.save()
    return user


def token_request(base: str, username: str, password: str, *, address: str):
    """The API's one password path: creating a token with HTTP Basic and the account password."""
    credentials = base64.b64encode(f"{username}:{password}".encode()).decode()
    return request(
        base + "/api/v1/user/tokens",
        address=address,
        method="POST",
        body=b'{"name": "ci"}',
        headers={"Authorization": f"Basic {credentials}", "Content-Type": "application/json"},
    )


def test_a_thousand_wrong_passwords_in_a_minute_are_cut_off_after_the_limit(server):
    victim, bystander = make_user("victim"), make_user("bystander")
    form = SignInForm(server)
    attacker = random_address()
    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        answers = list(
            pool.map(lambda i: form.post(victim.username, f"guess-{i}", address=attacker), range(1000))
        )
    assert time.monotonic() - started < 60
    checked = [a for a in answers if a.status == 200]  # the form again: a wrong password
    refused = [a for a in answers if a.status == 429]
    assert len(checked) + len(refused) == 1000, {a.status for a in answers}
    first = min(refused, key=lambda a: a.at)
    if window_turned(started, first, DAY):
        pytest.skip("the limit's day-long window turned during the test")
    # Concurrent guesses included: never more passwords checked than the limit.
    assert len(checked) == PER_ADDRESS
    assert all(int(a.headers["Retry-After"]) > 0 for a in refused)
    assert "Too many failed sign-ins" in first.body

    # From that address nothing is checked now, not even the right password (a right guess
    # must look like a wrong one), nor another account's.
    assert form.post(victim.username, PASSWORD, address=attacker).status == 429
    assert form.post(bystander.username, PASSWORD, address=attacker).status == 429
    # Elsewhere both sign in: the refused guesses never counted against the account.
    assert signed_in(form.post(victim.username, PASSWORD, address=random_address()))
    assert signed_in(form.post(bystander.username, PASSWORD, address=random_address()))


def test_one_account_guessed_from_many_addresses_is_cut_off_after_its_limit(server):
    victim, bystander = make_user("spread"), make_user("neighbour")
    form = SignInForm(server)
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(
                lambda i: form.post(victim.username, f"guess-{i}", address=random_address()), range(SPREAD)
            )
        )
    refused = [a for a in answers if a.status == 429]
    if window_turned(started, min(refused, key=lambda a: a.at), DAY):
        pytest.skip("the limit's day-long window turned during the test")
    assert sum(a.status == 200 for a in answers) == PER_ACCOUNT
    assert len(refused) == SPREAD - PER_ACCOUNT

    # The account is closed for the window, from any address and over the API too...
    assert form.post(victim.username, PASSWORD, address=random_address()).status == 429
    locked = token_request(server, victim.username, PASSWORD, address=random_address())
    assert locked.status == 429 and int(locked.headers["Retry-After"]) > 0
    assert locked.json()["error"]["code"] == "throttled"
    # ...and nobody else's is.
    assert signed_in(form.post(bystander.username, PASSWORD, address=random_address()))
    assert token_request(server, bystander.username, PASSWORD, address=random_address()).status == 201


def test_the_apis_password_path_counts_with_the_form(server):
    user, other = make_user("scripted"), make_user("other")
    form = SignInForm(server)
    address = random_address()
    for i in range(PER_ADDRESS):
        assert token_request(server, user.username, f"wrong-{i}", address=address).status == 401
    # Those failures were the address's whole allowance, on the form as on the API.
    assert form.post(other.username, PASSWORD, address=address).status == 429
    refused = token_request(server, other.username, PASSWORD, address=address)
    assert refused.status == 429 and refused.json()["error"]["message"].startswith("Too many failed sign-ins")
    # Right passwords do not use the allowance up.
    elsewhere = random_address()
    for _ in range(PER_ADDRESS + 2):
        assert token_request(server, other.username, PASSWORD, address=elsewhere).status == 201
    assert signed_in(form.post(user.username, PASSWORD, address=elsewhere))


def test_the_limit_ends_with_its_window(live_env, tmp_path):
    with limited_web(live_env, tmp_path, signin_address="3/5s") as base:
        user = make_user("patient")
        form = SignInForm(base)
        address = random_address()
        for attempt in range(10):  # 3, or up to 6 if a window turns meanwhile
            refusal = form.post(user.username, f"wrong-{attempt}", address=address)
            if refusal.status == 429:
                break
        assert refusal.status == 429
        wait = int(refusal.headers["Retry-After"])
        assert 1 <= wait <= 5
        if wait > 1:
            assert form.post(user.username, PASSWORD, address=address).status == 429
        deadline = time.monotonic() + wait + 5
        while True:
            answer = form.post(user.username, PASSWORD, address=address)
            if answer.status != 429 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert signed_in(answer), answer.status
