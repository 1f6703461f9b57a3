"""GET /api/v1/search/{code,repositories,commits,proposals}: paginated like every list,
anonymous callers see public content only, a read token sees its user's private content."""

from __future__ import annotations

import pytest
from django.test import Client

from repos import services
from reviews.models import Proposal
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def token_client(user, scope="read") -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=user, scope=scope)[1]}")


@pytest.fixture
def indexed(make_work):
    public = make_work("lighthouse", description="keeper of the lamp")
    sha = public.write({"lamp.c": "/* lamp */\nint lamp_on(void);\n"}, message="Light the lamp")
    public.index()
    owner = public.repo.owner
    private = make_work("vault", owner=owner, private=True, description="lamp secrets")
    private.write({"secret.c": "int lamp_secret(void);\n"}, message="Hide the lamp")
    private.index()
    for work, title in ((public, "Brighter lamp"), (private, "Secret lamp")):
        Proposal.objects.create(
            repository=work.repo,
            number=1,
            author=owner,
            source_ref="refs/users/owner/x",
            target_branch="main",
            title=title,
        )
    return public, private, sha


def test_anonymous_sees_public_only(indexed):
    _public, _private, sha = indexed
    client = Client()
    code = client.get("/api/v1/search/code", {"q": "lamp"}).json()
    assert code["count"] == 1 and code["next"] is None
    (hit,) = code["results"]
    assert (hit["repository"], hit["path"], hit["commit"]) == ("owner/lighthouse", "lamp.c", sha)
    assert hit["lines"] == [{"number": 1, "text": "/* lamp */"}, {"number": 2, "text": "int lamp_on(void);"}]
    assert hit["url"] == f"/owner/lighthouse/blob/{sha}/lamp.c#L1"
    repos = client.get("/api/v1/search/repositories", {"q": "lamp"}).json()
    assert [r["full_name"] for r in repos["results"]] == ["owner/lighthouse"]
    commits = client.get("/api/v1/search/commits", {"q": "lamp"}).json()
    assert [c["message"] for c in commits["results"]] == ["Light the lamp"]
    proposals = client.get("/api/v1/search/proposals", {"q": "lamp"}).json()
    assert [(p["title"], p["number"]) for p in proposals["results"]] == [("Brighter lamp", 1)]


def test_read_token_sees_its_private_content(indexed):
    _public, private, _sha = indexed
    client = token_client(private.repo.owner)
    for kind in ("code", "repositories", "commits", "proposals"):
        body = client.get(f"/api/v1/search/{kind}", {"q": "lamp"}).json()
        assert body["count"] == 2, (kind, body)
    outsider = token_client(UserFactory(username="outsider"))
    for kind in ("code", "repositories", "commits", "proposals"):
        assert outsider.get(f"/api/v1/search/{kind}", {"q": "lamp"}).json()["count"] == 1


def test_pagination(make_work):
    work = make_work()
    work.write({f"f{i}.txt": "needle\n" for i in range(5)})
    work.index()
    body = Client().get("/api/v1/search/code", {"q": "needle", "per_page": 2}).json()
    assert body["count"] == 5 and len(body["results"]) == 2 and "page=2" in body["next"]
    last = Client().get("/api/v1/search/code", {"q": "needle", "per_page": 2, "page": 3}).json()
    assert len(last["results"]) == 1 and last["next"] is None
    assert Client().get("/api/v1/search/code", {"q": "needle", "page": 9}).status_code == 404


@pytest.mark.parametrize(
    "params",
    [{}, {"q": ""}, {"q": "a\0b"}, {"q": "ab"}, {"q": "x" * 300}, {"q": "needle", "per_page": "x"}],
)
def test_bad_input_is_400(params):
    response = Client().get("/api/v1/search/code", params)
    assert response.status_code == 400, response.content
    assert response.json()


def test_injection_ish_queries_are_literals(make_work):
    work = make_work()
    work.write({"a.txt": "harmless\n"}, message="harmless")
    work.index()
    for text in ["' OR 1=1 --", '" OR ""="', "%", "_", "\\", "*", "NEAR(a b)", "a OR b"]:
        for kind in ("code", "repositories", "commits", "proposals"):
            response = Client().get(f"/api/v1/search/{kind}", {"q": text})
            if kind == "code" and len(text) < 3:
                assert response.status_code == 400
                continue
            assert response.status_code == 200, (kind, text, response.content)
            assert response.json()["count"] == 0, (kind, text)
    # Quotes around a word are part of the literal for code.
    assert Client().get("/api/v1/search/code", {"q": "harmless' --"}).json()["count"] == 0
    assert Client().get("/api/v1/search/code", {"q": "harmless"}).json()["count"] == 1
