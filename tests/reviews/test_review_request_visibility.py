"""A review request naming someone who may not see the proposal (hugo's workspace is hidden:
only hugo, the repository's admins and staff see his proposal) is refused exactly as a request
on a proposal that does not exist, over the API of the live server and through the page's form,
and nobody is asked or told. Someone who may see it is asked as before."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from notifications.models import Notification
from reviews.models import ReviewRequest
from tests.factories import UserFactory
from tests.workspaces.moderation_support import signed_in
from workspaces import moderation

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

MISSING = 999


def post(world, path: str, token: str, body: dict) -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://{world.host}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


_CSRF = re.compile(r'(csrfmiddlewaretoken" value="|csrf-token" content=")[^"]*')


def page(response, number: int) -> str:
    """The page without what differs by request alone: its CSRF token, the number asked."""
    return _CSRF.sub(r"\1", response.content.decode()).replace(f"/{number}/", "/N/")


@pytest.fixture
def scene(world):
    """hugo proposes from his workspace, which staff then hide; maud maintains; bob reads."""
    hugo = world.add("hugo")
    hugo.commit("hugo's work", name="hugo.txt")
    assert hugo.push("HEAD:refs/users/hugo/w").returncode == 0
    status, text = post(
        world,
        f"/api/v1/repos/{world.repo.full_name}/proposals",
        hugo.token,
        {"source_ref": "w", "target_branch": "main", "title": "hugo's proposal"},
    )
    assert status == 201, text
    world.number = json.loads(text)["number"]
    world.hugo, world.maud, world.bob = hugo, world.add("maud", "maintainer"), world.add("bob")
    staff = UserFactory(username="sam", is_staff=True)
    moderation.do_hide_workspace(repo=world.repo, user=hugo.user, acting_user=staff, reason="abuse")
    Notification.objects.all().delete()  # what opening it told: only what follows counts here
    return world


def test_the_api_refuses_a_reviewer_who_cannot_see_it_as_a_missing_proposal(scene):
    api = f"/api/v1/repos/{scene.repo.full_name}/proposals"
    for asker in (scene.hugo, scene.owner):  # the author, and an admin: both see the proposal
        for reviewer in ("bob", "maud"):
            hidden = post(scene, f"{api}/{scene.number}/review-requests", asker.token, {"username": reviewer})
            missing = post(scene, f"{api}/{MISSING}/review-requests", asker.token, {"username": reviewer})
            assert hidden == missing, (asker.username, reviewer, hidden, missing)
            assert hidden[0] == 404 and json.loads(hidden[1]) == {
                "error": {"code": "not_found", "message": "Proposal not found."}
            }
    assert not ReviewRequest.objects.exists() and not Notification.objects.exists()
    # The admin may see it: asked, and told.
    status, text = post(
        scene, f"{api}/{scene.number}/review-requests", scene.hugo.token, {"username": "owner"}
    )
    assert status == 201, text
    assert list(ReviewRequest.objects.values_list("user__username", flat=True)) == ["owner"]
    assert list(Notification.objects.values_list("user__username", "kind")) == [("owner", "review_requested")]


def test_the_form_refuses_a_reviewer_who_cannot_see_it_as_a_missing_proposal(scene):
    base = f"/{scene.repo.full_name}/proposals"
    hugo = signed_in(scene.hugo.user)
    for reviewer in ("bob", "maud"):
        hidden = hugo.post(f"{base}/{scene.number}/review-requests", {"username": reviewer})
        missing = hugo.post(f"{base}/{MISSING}/review-requests", {"username": reviewer})
        assert hidden.status_code == missing.status_code == 404
        assert page(hidden, scene.number) == page(missing, MISSING)
    assert not ReviewRequest.objects.exists() and not Notification.objects.exists()
    response = hugo.post(f"{base}/{scene.number}/review-requests", {"username": "owner"})
    assert response.status_code == 302
    assert list(ReviewRequest.objects.values_list("user__username", flat=True)) == ["owner"]
