"""What the live moderation tests share: a repository on the live server where alice pushed
one workspace ref, the flags, the API over HTTP with a pusher's token, and the audit rows."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from django.test import Client

from repos.models import AuditEntry
from tests.factories import UserFactory
from workspaces.models import Workspace

NONE = {"frozen": False, "hidden": False, "taken_down": False}


def flags(**set_) -> dict[str, bool]:
    return {**NONE, **set_}


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def call(world, pusher, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """The API over HTTP on the live server, with the pusher's token."""
    request = urllib.request.Request(
        f"http://{world.host}{path}",
        method=method,
        data=json.dumps(body or {}).encode(),
        headers={"Authorization": f"Bearer {pusher.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def audit(world) -> list[tuple[str, dict, dict]]:
    rows = AuditEntry.objects.filter(repository=world.repo).order_by("pk")
    return [
        (
            e.action,
            {k: v for k, v in e.before.items() if k in NONE},
            {k: v for k, v in e.after.items() if k in NONE},
        )
        for e in rows
    ]


@pytest.fixture
def scene(world):
    alice = world.add("alice")
    world.feature = alice.commit("alice's work", name="alice.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    world.alice = alice
    world.staff = UserFactory(username="staff", is_staff=True)
    return world


def ws(world) -> Workspace:
    return Workspace.objects.get(repository=world.repo, user=world.alice.user)


def flags_of(world) -> dict[str, bool]:
    """alice's flags; none before anything made her Workspace row (the push's own row is
    written by a task, which no worker runs in these tests)."""
    row = Workspace.objects.filter(repository=world.repo, user=world.alice.user).first()
    return row.flags if row is not None else dict(NONE)


def call_raw(world, pusher, path: str) -> int:
    request = urllib.request.Request(
        f"http://{world.host}{path}", headers={"Authorization": f"Bearer {pusher.token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
