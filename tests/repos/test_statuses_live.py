"""A status token against the real server with real git: clone, fetch and push are refused,
while the same token posts a status over HTTP (the CI's whole job)."""

from __future__ import annotations

import json
import urllib.request

import pytest

from repos import services
from repos.models import CommitStatus, Repository, Visibility
from tests.gitutil import git

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def test_a_status_token_cannot_clone_or_push_but_posts_statuses(world, tmp_path):
    # Private: git sends the URL's credentials only when the server asks, and anyone may
    # clone a public repository without any.
    Repository.objects.filter(pk=world.repo.pk).update(visibility=Visibility.PRIVATE)
    token = services.token_create(user=world.owner.user, scope="status")[1]
    remote = f"http://owner:{token}@{world.host}/owner/project.git"
    env = {**world.env, "GIT_TERMINAL_PROMPT": "0"}
    clone = git(env, "clone", "--quiet", remote, str(tmp_path / "clone"), check=False)
    assert clone.returncode != 0 and "403" in clone.stderr, clone.stderr
    assert not (tmp_path / "clone" / ".git").exists()
    world.owner.commit("more")
    push = git(env, "push", remote, "HEAD:refs/heads/main", cwd=world.owner.work, check=False)
    assert push.returncode != 0 and "403" in push.stderr, push.stderr

    request = urllib.request.Request(
        f"http://{world.host}/api/v1/repos/owner/project/statuses/{world.base_sha[:10]}",
        data=json.dumps({"state": "success", "context": "ci"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        assert json.load(response)["sha"] == world.base_sha
    assert CommitStatus.objects.get().state == "success"
