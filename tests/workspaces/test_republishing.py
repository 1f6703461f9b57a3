"""The re-publishing rule as the attack found it wrong: a take-down blocked unrelated pushes that
shared bytes with the taken-down work (an identical vendored file pushed by the admin, the web
editor too), and a hidden workspace holding an empty file blocked another user's unrelated
empty file. Now a take-down blocks its commits, staff block trees and blobs by id on an
audited, staff-only list, and nothing else is blocked; pushes (the pre-receive hook) and web
writes (the web editor) meet the same rule."""

from __future__ import annotations

import pytest
from django.test import Client

from repos.errors import Forbidden, ServiceError
from repos.models import AuditEntry
from tests.factories import UserFactory
from workspaces import moderation, moderation_content
from workspaces.models import BlockedObject, ModerationAction
from workspaces.webedit import service as webedit
from workspaces.webedit.types import EditRequest, FileChange

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

LIB = "/*! popular-lib v1.2.3 | MIT */\nfunction popular() { return 42; }\n"
REFUSED = "a moderator took down or blocked"


@pytest.fixture
def scene(world):
    alice = world.add("alice")
    (alice.work / "lib.js").write_text(LIB)
    (alice.work / "empty.txt").write_text("")
    alice.git("add", "lib.js", "empty.txt", check=True)
    alice.git("commit", "--quiet", "-m", "vendor lib.js", check=True)
    world.sha = alice.git("rev-parse", "HEAD", check=True).stdout.strip()
    world.lib_blob = alice.git("rev-parse", "HEAD:lib.js", check=True).stdout.strip()
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    world.alice = alice
    world.bob = world.add("bob")
    world.staff = UserFactory(username="staff", is_staff=True)
    return world


def commit_files(pusher, files: dict[str, str], message: str, base: str = "origin/main") -> str:
    pusher.git("checkout", "--quiet", "-B", "work", base, check=True)
    for name, text in files.items():
        path = pusher.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        pusher.git("add", name, check=True)
    pusher.git("commit", "--quiet", "-m", message, check=True)
    return pusher.git("rev-parse", "HEAD", check=True).stdout.strip()


def web_edit(scene, user, path: str, text: str, *, name: str = "web"):
    main = scene.refs()["refs/heads/main"]
    return webedit.commit_changes(
        EditRequest(
            repository=scene.repo,
            user=user,
            base_ref="main",
            base_commit=main,
            changes=(FileChange("add", path, text.encode()),),
            message=f"add {path}",
            name=name,
        )
    )


def take_down(scene):
    moderation.do_take_down_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="legal request"
    )


def test_a_take_down_does_not_block_the_same_bytes_in_unrelated_work(scene):
    take_down(scene)
    owner = scene.owner  # the repository's admin
    commit_files(owner, {"vendor/popular-lib.js": LIB, "vendor/empty.txt": ""}, "vendor popular-lib", "main")
    result = owner.push("HEAD:main")
    assert result.returncode == 0, result.stderr
    # A contributor's push and the web editor, with the same bytes under another name.
    commit_files(scene.bob, {"third_party/lib.js": LIB}, "bob vendors it too")
    assert scene.bob.push("HEAD:refs/users/bob/vendor").returncode == 0
    assert web_edit(scene, scene.bob.user, "copy/lib.js", LIB).commit
    # The taken-down commit itself stays blocked.
    scene.bob.git("fetch", "--quiet", scene.bob.remote, "refs/users/alice/feature")
    result = scene.bob.push(f"{scene.sha}:refs/users/bob/copy")
    assert result.returncode != 0


def test_a_hidden_workspace_blocks_no_one(scene):
    moderation.do_hide_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="spam"
    )
    commit_files(scene.bob, {"notes/empty.txt": "", "notes/lib.js": LIB}, "unrelated")
    result = scene.bob.push("HEAD:refs/users/bob/notes")
    assert result.returncode == 0, result.stderr
    assert web_edit(scene, scene.bob.user, "more/empty.txt", "").commit


def test_blocked_content_is_refused_in_any_history_and_unblocked_again(scene):
    entry = moderation_content.do_block_content(
        repo=scene.repo, oid=scene.lib_blob.upper(), acting_user=scene.staff, reason="DMCA notice 42"
    )
    assert entry.action == ModerationAction.BLOCK_CONTENT and entry.detail["oid"] == scene.lib_blob
    assert BlockedObject.objects.get(repository=scene.repo).object_type == "blob"
    bob = scene.bob
    commit_files(bob, {"deep/inside/renamed.js": LIB}, "the same file again")
    for refspec in ("HEAD:refs/users/bob/again", "HEAD:refs/for/main"):
        result = bob.push(refspec)
        assert result.returncode != 0 and REFUSED in result.stderr, (refspec, result.stderr)
    with pytest.raises(Forbidden, match="taken down or blocked"):
        web_edit(scene, bob.user, "web/lib.js", LIB)
    # Staff may publish it (a restore after a counter-notice, say), and unblocking lets it in.
    staff = scene.add("staff2")
    staff.user.is_staff = True
    staff.user.save(update_fields=["is_staff"])
    commit_files(staff, {"restored.js": LIB}, "staff restores")
    assert staff.push("HEAD:refs/users/staff2/restored").returncode == 0
    moderation_content.do_unblock_content(
        repo=scene.repo, oid=scene.lib_blob, acting_user=scene.staff, reason="counter-notice"
    )
    assert bob.push("HEAD:refs/users/bob/again").returncode == 0
    actions = list(AuditEntry.objects.filter(repository=scene.repo).values_list("action", flat=True))
    assert ModerationAction.BLOCK_CONTENT in actions and ModerationAction.UNBLOCK_CONTENT in actions


def test_what_can_be_blocked_and_by_whom(scene):
    empty_blob = scene.alice.git("rev-parse", f"{scene.sha}:empty.txt", check=True).stdout.strip()
    empty_tree = scene.alice.git("hash-object", "-t", "tree", "/dev/null", check=True).stdout.strip()
    for oid, why in (
        (empty_blob, "empty blob"),
        (empty_tree, "empty tree"),  # every repository holds it, stored or not
        (scene.sha, "only trees and blobs"),
        (scene.lib_blob + "00", "whole object id"),
        ("1" * 40, "No object"),
    ):
        with pytest.raises(ServiceError) as refused:
            moderation_content.do_block_content(repo=scene.repo, oid=oid, acting_user=scene.staff, reason="r")
        assert why in str(refused.value), (oid, refused.value)
    owner = scene.repo.owner  # an admin of the repository, not staff
    with pytest.raises(Forbidden):
        moderation_content.do_block_content(
            repo=scene.repo, oid=scene.lib_blob, acting_user=owner, reason="r"
        )
    assert not BlockedObject.objects.exists()


def test_the_moderation_page_lists_blocked_content_to_staff_only(scene):
    moderation_content.do_block_content(
        repo=scene.repo, oid=scene.lib_blob, acting_user=scene.staff, reason="DMCA"
    )
    url = f"/{scene.repo.full_name}/settings/moderation"
    admin = Client()
    admin.force_login(scene.repo.owner)
    page = admin.get(url)
    assert page.status_code == 200 and scene.lib_blob not in page.content.decode()
    assert "Blocked content" not in page.content.decode()
    # An admin's post is refused by the service, and nothing changes.
    admin.post(url, {"content": "unblock", "oid": scene.lib_blob, "reason": "mine"})
    assert BlockedObject.objects.filter(oid=scene.lib_blob).exists()
    staff = Client()
    staff.force_login(scene.staff)
    page = staff.get(url)
    assert scene.lib_blob in page.content.decode() and "DMCA" in page.content.decode()
    staff.post(url, {"content": "unblock", "oid": scene.lib_blob, "reason": "counter-notice"}, follow=True)
    assert not BlockedObject.objects.exists()
