"""Objects of every class (tests/objectclasses.py) pushed over HTTP to the live server with real
git: accepted legacy objects land and are recorded; refused ones leave nothing behind, and the
client is told which object, which rule, and what to do.

One module-scoped world pushes every case once, each into a repository of its own, and keeps
what it saw (client output, refs, objects, fsck, database rows); the parametrized tests then
judge each case. Cases git's own client cannot pack go as raw receive-pack requests.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from repos import services
from repos.models import LegacyObject, ObjectCheckOverride, Push, Role
from tests.objectclasses import CASES, UNPARSEABLE, Built, build, fsck_ids, raw_pack
from tests.repos.livepush import Account, client_env, git_push, raw_push, server_has, server_refs

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
ZERO = "0" * 40


@dataclass
class Outcome:
    built: Built
    target: str
    ok: bool
    output: str
    refs: dict[str, str]
    present: bool
    pushes: list[tuple[str, list[tuple[str, str]]]]
    legacy: set[tuple[str, str, str]]
    fsck: dict[str, set[str]] = field(default_factory=dict)


def push_case(world, built: Built, name: str) -> Outcome:
    repo = services.repository_create(owner=world.owner.user, name=name)
    for key, value in built.case.server_config:
        subprocess.run(["git", "--git-dir", str(repo.disk_path), "config", key, value], check=True)
    target = f"refs/users/alice/{built.case.msg_id}"
    if built.case.raw:
        pack = raw_pack(world.work, world.env, built.objects)
        ok, output = raw_push(world.base, world.alice, repo, [(ZERO, built.tip, target)], pack)
    else:
        url = world.alice.url(world.host, repo)
        ok, output = git_push(world.env, world.work, url, f"{built.ref}:{target}")
    pushes = [
        (p.pusher_name, [(u.ref, u.new) for u in p.ref_updates.all()])
        for p in Push.objects.filter(repository=repo)
    ]
    legacy = set(LegacyObject.objects.filter(repository=repo).values_list("oid", "msg_id", "source"))
    outcome = Outcome(
        built, target, ok, output, server_refs(repo), server_has(repo, built.bad_oid), pushes, legacy
    )
    if built.case.accepted:
        outcome.fsck = fsck_ids(repo.disk_path, world.env, built.case.msg_id, bare=True)
    return outcome


class World:
    def __init__(self, base: str, tmp: Path):
        self.base = base
        self.host = base.removeprefix("http://")
        self.env = client_env(tmp / "home")
        self.work = tmp / "work"
        self.owner = Account("octo")
        self.alice = Account("alice")


@pytest.fixture(scope="module")
def outcomes(live_server_url, django_db_blocker, tmp_path_factory):
    """Every case pushed once. The rows are read here: the first test's teardown empties the
    database, the repositories on disk stay."""
    with django_db_blocker.unblock():
        world = World(live_server_url, tmp_path_factory.mktemp("object-checks"))
        seen = {
            msg_id: push_case(world, build(case, world.work, world.env), f"oc-{msg_id}")
            for msg_id, case in CASES.items()
        }
        for name, (case, _said) in UNPARSEABLE.items():
            seen[f"unparseable-{name}"] = push_case(world, build(case, world.work, world.env), f"oc-u-{name}")
    return seen


ACCEPTED = sorted(msg_id for msg_id, case in CASES.items() if case.accepted)
REFUSED = sorted(msg_id for msg_id, case in CASES.items() if not case.accepted)


@pytest.mark.parametrize("msg_id", ACCEPTED)
def test_an_accepted_legacy_object_lands_and_is_recorded(outcomes, msg_id):
    seen = outcomes[msg_id]
    bad, tip = seen.built.bad_oid, seen.built.tip
    assert seen.ok, seen.output
    assert f"remote: warning: object {bad}: {msg_id}: " in seen.output
    assert "hostsite: object" not in seen.output
    assert seen.refs == {seen.target: tip} and seen.present
    # fsck-clean apart from exactly that warning, on that object
    assert seen.fsck == {msg_id: {bad}}
    assert seen.legacy == {(bad, msg_id, "push")}
    assert seen.pushes == [("alice", [(seen.target, tip)])]


@pytest.mark.parametrize("msg_id", REFUSED)
def test_a_refused_object_leaves_nothing_and_says_what_to_do(outcomes, msg_id):
    seen = outcomes[msg_id]
    bad = seen.built.bad_oid
    assert not seen.ok, seen.output
    assert f"remote: error: object {bad}: {msg_id}: " in seen.output
    explained = f"remote: hostsite: object {bad} refused by the {msg_id} check: {CASES[msg_id].check.why}."
    assert explained in seen.output
    assert "ask the site's staff to allow" in seen.output
    # our line comes right under git's own
    lines = seen.output.splitlines()
    git_said = f"remote: error: object {bad}: {msg_id}"
    first = lines.index(next(line for line in lines if line.startswith(git_said)))
    assert lines[first + 1].startswith(f"remote: hostsite: object {bad} refused")
    assert not seen.present and seen.refs == {}
    assert seen.pushes == [] and seen.legacy == set()


@pytest.mark.parametrize("name", sorted(UNPARSEABLE))
def test_an_object_git_cannot_parse_is_refused_too(outcomes, name):
    seen = outcomes[f"unparseable-{name}"]
    assert not seen.ok
    assert UNPARSEABLE[name][1] in seen.output
    assert not seen.present and seen.refs == {} and seen.pushes == [] and seen.legacy == set()


# --- one push, several refs; a maintainer's big push; staff's override ----------------------------


@pytest.fixture
def scene(live_server_url, tmp_path):
    world = World(live_server_url, tmp_path)
    world.maintainer = Account("max")
    world.staff = Account("sam", is_staff=True)
    return world


def test_a_push_with_one_refused_object_is_rejected_whole(scene):
    clean = build(CASES["zeroPaddedFilemode"], scene.work, scene.env)
    refused = build(CASES["hasDotgit"], scene.work, scene.env)
    repo = services.repository_create(owner=scene.owner.user, name="two-refs")
    ok, output = git_push(
        scene.env,
        scene.work,
        scene.alice.url(scene.host, repo),
        f"{clean.ref}:refs/users/alice/clean",
        f"{refused.ref}:refs/users/alice/refused",
    )
    assert not ok and f"remote: hostsite: object {refused.bad_oid} refused by the hasDotgit check" in output
    assert server_refs(repo) == {}
    assert not server_has(repo, clean.tip) and not server_has(repo, refused.bad_oid)
    assert not Push.objects.filter(repository=repo).exists()
    assert not LegacyObject.objects.filter(repository=repo).exists()


def test_a_maintainer_pushes_a_legacy_history_to_main_through_index_pack(scene):
    """Big enough (over receive.unpackLimit) that index-pack, not unpack-objects, reads it."""
    built = build(CASES["zeroPaddedFilemode"], scene.work, scene.env)
    env = {
        **scene.env,
        "GIT_AUTHOR_NAME": "Max",
        "GIT_AUTHOR_EMAIL": "max@example.invalid",
        "GIT_COMMITTER_NAME": "Max",
        "GIT_COMMITTER_EMAIL": "max@example.invalid",
    }
    work = ["git", "-C", str(scene.work)]
    subprocess.run([*work, "checkout", "-q", "-b", "big", built.tip], env=env, check=True)
    for i in range(40):
        (scene.work / f"file{i}.txt").write_text(f"change {i}\n")
        subprocess.run([*work, "add", "."], env=env, check=True)
        subprocess.run([*work, "commit", "-q", "-m", f"change {i}"], env=env, check=True)
    tip = subprocess.run(
        [*work, "rev-parse", "HEAD"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    repo = services.repository_create(owner=scene.owner.user, name="big")
    services.membership_set(repo=repo, user=scene.maintainer.user, role=Role.MAINTAINER)
    ok, output = git_push(env, scene.work, scene.maintainer.url(scene.host, repo), "big:refs/heads/main")
    assert ok, output
    assert f"remote: warning: object {built.bad_oid}: zeroPaddedFilemode: " in output
    assert server_refs(repo) == {"refs/heads/main": tip}
    counts = subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "count-objects", "-v"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "in-pack: 0" not in counts and "\ncount: 0\n" in "\n" + counts  # kept as a pack: index-pack
    assert set(LegacyObject.objects.filter(repository=repo).values_list("oid", "msg_id", "source")) == {
        (built.bad_oid, "zeroPaddedFilemode", "push")
    }
    push = Push.objects.get(repository=repo)
    assert push.pusher == scene.maintainer.user and not push.touches_workspace
    assert [(u.ref, u.new) for u in push.ref_updates.all()] == [("refs/heads/main", tip)]


def api(base: str, account: Account, method: str, path: str, payload=None) -> tuple[int, dict]:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=json.dumps(payload).encode() if payload is not None else None,
        headers={"Authorization": f"Bearer {account.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_staff_override_lets_a_refused_object_into_that_repository_only(scene):
    built = build(CASES["hasDotgit"], scene.work, scene.env)
    lenient = services.repository_create(owner=scene.owner.user, name="lenient")
    strict = services.repository_create(owner=scene.owner.user, name="strict")
    reason = "a 2009 history with a .git directory checked in; hosted as it is, by agreement"
    path = f"/api/v1/repos/{lenient.full_name}/object-checks"
    # the owner (an admin, not staff) may not; staff may
    status, body = api(
        scene.base, scene.owner, "POST", path, {"msg_id": "hasDotgit", "severity": "warn", "reason": reason}
    )
    assert status == 403 and not ObjectCheckOverride.objects.exists()
    status, body = api(
        scene.base, scene.staff, "POST", path, {"msg_id": "hasdotgit", "severity": "warn", "reason": reason}
    )
    assert status == 201, body
    assert [body[k] for k in ("msg_id", "severity", "actor", "reason")] == [
        "hasDotgit",
        "warn",
        "sam",
        reason,
    ]

    refspec = f"{built.ref}:refs/users/alice/x"
    ok, output = git_push(scene.env, scene.work, scene.alice.url(scene.host, lenient), refspec)
    assert ok, output
    assert f"remote: warning: object {built.bad_oid}: hasDotgit: " in output
    assert "hostsite: object" not in output
    assert server_has(lenient, built.bad_oid)
    assert set(LegacyObject.objects.filter(repository=lenient).values_list("oid", "msg_id")) == {
        (built.bad_oid, "hasDotgit")
    }
    status, body = api(scene.base, scene.owner, "GET", path)
    assert status == 200
    in_force = {row["msg_id"]: row for row in body["checks"]}
    assert in_force["hasDotgit"]["severity"] == "warn" and in_force["hasDotgit"]["overridden"]
    assert body["legacy"]["by_check"] == [{"msg_id": "hasDotgit", "count": 1, "examples": [built.bad_oid]}]

    ok, output = git_push(scene.env, scene.work, scene.alice.url(scene.host, strict), refspec)
    assert not ok and "refused by the hasDotgit check" in output
    assert not server_has(strict, built.bad_oid) and server_refs(strict) == {}
