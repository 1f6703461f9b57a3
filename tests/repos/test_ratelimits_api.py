"""API limits against the real server: reads and writes counted apart per token, anonymous
requests per address, and token guesses per address, answered 429 in the API's error format."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from repos import services
from tests.factories import UserFactory
from tests.repos.ratelimit_support import limited_web, random_address, request, window_turned

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
READS, WRITES, ANONYMOUS, FAILURES = 5, 3, 4, 3
DAY = 86400
WRONG = "hst_" + "x" * 40


@pytest.fixture(scope="module")
def server(live_env, tmp_path_factory):
    with limited_web(
        live_env,
        tmp_path_factory.mktemp("web-logs"),
        api_read=f"{READS}/d",
        api_write=f"{WRITES}/d",
        api_anonymous=f"{ANONYMOUS}/d",
        auth_failures=f"{FAILURES}/d",
    ) as url:
        yield url


@pytest.fixture
def owner():
    user = UserFactory(username=f"api-{uuid.uuid4().hex[:8]}")
    services.repository_create(owner=user, name="demo", visibility="public")
    return user


def api(server, method: str, path: str, *, token: str | None = None, address: str, data=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps(data).encode() if data is not None else None
    return request(server + path, address=address, method=method, body=body, headers=headers)


def assert_throttled(answer) -> None:
    assert answer.status == 429, answer.body
    assert int(answer.headers["Retry-After"]) > 0
    assert answer.json()["error"]["code"] == "throttled"


def test_reads_and_writes_are_counted_apart_per_token(server, owner):
    first = services.token_create(user=owner, scope="write")[1]
    second = services.token_create(user=owner, scope="write")[1]
    address, repo = random_address(), f"/api/v1/repos/{owner.username}/demo"
    started = time.monotonic()
    reads = [api(server, "GET", "/api/v1/user", token=first, address=address) for _ in range(READS + 1)]
    if reads[-1].status == 429 and window_turned(started, reads[-1], DAY):
        pytest.skip("the limit's day-long window turned during the test")
    assert [r.status for r in reads] == [200] * READS + [429]
    assert_throttled(reads[-1])

    # Writes have a count of their own, which the reads did not use.
    writes = [
        api(server, "PATCH", repo, token=first, address=address, data={"description": f"d{i}"})
        for i in range(WRITES + 1)
    ]
    assert [w.status for w in writes] == [200] * WRITES + [429]
    assert_throttled(writes[-1])
    # Another token of the same user counts on its own.
    assert api(server, "GET", "/api/v1/user", token=second, address=address).status == 200
    assert api(server, "PATCH", repo, token=second, address=address, data={"description": "x"}).status == 200


def test_anonymous_requests_are_counted_per_address(server, owner):
    address, path = random_address(), f"/api/v1/repos/{owner.username}/demo"
    answers = [api(server, "GET", path, address=address) for _ in range(ANONYMOUS + 1)]
    assert [a.status for a in answers] == [200] * ANONYMOUS + [429]
    assert_throttled(answers[-1])
    assert api(server, "GET", path, address=random_address()).status == 200


def test_token_guesses_are_cut_off_per_address(server, owner):
    token = services.token_create(user=owner, scope="read")[1]
    guesser = random_address()
    guesses = [api(server, "GET", "/api/v1/user", token=WRONG, address=guesser) for _ in range(FAILURES + 1)]
    assert [g.status for g in guesses] == [401] * FAILURES + [429]
    assert_throttled(guesses[-1])
    assert guesses[-1].json()["error"]["message"].startswith("Too many failed authentications")
    # Nothing is checked from there now, a right token included; elsewhere it works.
    assert_throttled(api(server, "GET", "/api/v1/user", token=token, address=guesser))
    assert api(server, "GET", "/api/v1/user", token=token, address=random_address()).status == 200
    # Malformed credentials are failures too.
    other = random_address()
    for _ in range(FAILURES):
        malformed = request(server + "/api/v1/user", address=other, headers={"Authorization": "Basic !!"})
        assert malformed.status == 401
    assert (
        request(server + "/api/v1/user", address=other, headers={"Authorization": "Basic !!"}).status == 429
    )
