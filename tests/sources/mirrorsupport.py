"""What the in-process mirror tests share: the people around a repository, tasks captured
instead of sent, and reading refs."""

from __future__ import annotations

import subprocess

from django.test import Client

from repos import services as repo_services
from repos.models import Role
from tests.factories import RepositoryFactory, UserFactory

XSS = "<script>window.pwned=1</script>"


def capture_enqueued(monkeypatch) -> list[tuple[str, tuple]]:
    """Tasks enqueued, as (name, args), instead of sent: no worker runs in these tests."""
    from celery.app.task import Task

    calls: list[tuple[str, tuple]] = []
    monkeypatch.setattr(
        Task,
        "apply_async",
        lambda self, args=None, kwargs=None, **_: calls.append((self.name, tuple(args or ()))),
    )
    return calls


def make_people() -> dict:
    olga = UserFactory(username="olga")
    repo = RepositoryFactory(owner=olga, name="proj")
    reader, outsider = UserFactory(username="rita"), UserFactory(username="otto")
    repo_services.membership_set(repo=repo, user=reader, role=Role.READER)
    return {
        "olga": olga,
        "repo": repo,
        "reader": reader,
        "outsider": outsider,
        "staff": UserFactory(username="staff", is_staff=True),
    }


def refs_of(path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client
