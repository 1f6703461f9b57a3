"""No fetch tells a moderated object from one that does not exist, tried over smart HTTP the way
the attacks went: a taken-down id padded to SHA-256 length (git read the first 40 digits and
served it), a `have` of a hidden id (git ACKed it), a `shallow` of a hidden blob (git died on
it, where it skips an unknown id), object-info, `deepen-not` naming a hidden ref, and ls-refs
of hidden namespaces. Each answer for a hidden id is compared byte for byte with the answer for
an id nobody has, the id swapped in, for anonymous and signed-in viewers alike."""

from __future__ import annotations

import pytest

from gitcore import pktline
from tests.factories import UserFactory
from tests.workspaces.rawgit import (
    UNKNOWN,
    normalized,
    object_info_request,
    post,
    served_pack,
    v0,
    v2,
)
from workspaces import moderation

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

# The capabilities of a real client's first v0 want, without progress (its timing varies).
V0_CAPS = "multi_ack_detailed side-band-64k thin-pack ofs-delta no-progress"


@pytest.fixture(params=["take down", "hide"])
def scene(world, request):
    alice = world.add("alice")
    world.sha = alice.commit("alice's secret", name="secret.txt")
    world.blob = alice.git("rev-parse", f"{world.sha}:secret.txt", check=True).stdout.strip()
    world.tree = alice.git("rev-parse", f"{world.sha}^{{tree}}", check=True).stdout.strip()
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    world.bob = world.add("bob")
    staff = UserFactory(username="staff", is_staff=True)
    action = (
        moderation.do_take_down_workspace if request.param == "take down" else moderation.do_hide_workspace
    )
    action(repo=world.repo, user=alice.user, acting_user=staff, reason="moderated")
    world.visible_blob = world.owner.git("rev-parse", "HEAD:file.txt", check=True).stdout.strip()
    return world


def viewers(scene):
    return [None, scene.bob]


def hidden_ids(scene):
    return [scene.sha, scene.blob, scene.tree]


def same_as_unknown(answer_for, hidden: str) -> None:
    """The answer for a hidden id is the answer for an unknown one, that id swapped in (in
    git's lower case, and as sent where git echoes it)."""
    status, body = answer_for(hidden)
    unknown_status, unknown_body = answer_for(UNKNOWN)
    swapped = unknown_body.replace(UNKNOWN.upper().encode(), hidden.upper().encode())
    swapped = swapped.replace(UNKNOWN.encode(), hidden.encode())
    assert (status, normalized(body)) == (unknown_status, normalized(swapped)), (hidden, status, body[:300])


@pytest.mark.parametrize("padding", ["0" * 24, "f" * 24, "0"])
def test_padded_ids_are_refused_before_git_runs(scene, padding):
    for who in viewers(scene):
        for oid in (scene.sha, scene.sha.upper(), scene.base_sha):
            padded = oid + padding
            for status, body in (
                v2(scene, "fetch", f"want {padded}\n", "done\n", who=who),
                v2(scene, "fetch", f"want {scene.base_sha}\n", f"have {padded}\n", who=who),
                v2(scene, "fetch", f"want {scene.base_sha}\n", f"shallow {padded}\n", "done\n", who=who),
                post(scene, "upload-pack", object_info_request(padded), who=who, v2=True),
                v0(scene, f"want {padded} {V0_CAPS}\n", pktline.FLUSH, "done\n", who=who),
            ):
                assert status == 400 and b"PACK" not in body, (oid, who, status, body[:200])
                assert b"object id" in body, body
    # The same requests with the id as git spells it are served (visible content).
    assert served_pack(*v2(scene, "fetch", f"want {scene.base_sha}\n", "done\n"))


def test_a_hidden_want_answers_as_an_unknown_one(scene):
    for who in viewers(scene):
        for hidden in hidden_ids(scene):
            for spelled in (hidden, hidden.upper()):
                same_as_unknown(
                    lambda oid, w=who: v2(scene, "fetch", f"want {oid}\n", "done\n", who=w), hidden
                )
                _status, body = v2(scene, "fetch", f"want {spelled}\n", "done\n", who=who)
                assert b"PACK" not in body and f"not our ref {hidden}".encode() in body, body
            # A hidden want among visible ones, in v0 too.
            same_as_unknown(
                lambda oid, w=who: v0(
                    scene,
                    f"want {scene.base_sha} {V0_CAPS}\n",
                    f"want {oid}\n",
                    pktline.FLUSH,
                    "done\n",
                    who=w,
                ),
                hidden,
            )


def test_haves_of_hidden_objects_answer_as_unknown_ones(scene):
    for who in viewers(scene):
        for hidden in hidden_ids(scene):
            same_as_unknown(
                lambda oid, w=who: v2(scene, "fetch", f"want {scene.base_sha}\n", f"have {oid}\n", who=w),
                hidden,
            )
            same_as_unknown(
                lambda oid, w=who: v0(
                    scene,
                    f"want {scene.base_sha} {V0_CAPS}\n",
                    pktline.FLUSH,
                    f"have {oid}\n",
                    pktline.FLUSH,
                    who=w,
                ),
                hidden,
            )
    # The comparison can fail: a visible have is acknowledged, unlike an unknown one.
    _status, body = v2(scene, "fetch", f"want {scene.base_sha}\n", f"have {scene.visible_blob}\n")
    assert f"ACK {scene.visible_blob}".encode() in body, body


def test_shallow_lines_of_hidden_objects_answer_as_unknown_ones(scene):
    def fetch(oid, who):
        return v2(
            scene,
            "fetch",
            f"want {scene.base_sha}\n",
            f"shallow {oid}\n",
            "deepen 1\n",
            "no-progress\n",
            "done\n",
            who=who,
        )

    for who in viewers(scene):
        for hidden in (scene.sha, scene.blob):
            same_as_unknown(lambda oid, w=who: fetch(oid, w), hidden)
    # git dies on a shallow line naming a blob it holds: a visible one shows the difference.
    assert normalized(fetch(scene.visible_blob, None)[1]) != normalized(fetch(UNKNOWN, None)[1])


def test_object_info_says_of_hidden_objects_what_it_says_of_unknown_ones(scene):
    def info(oid, who):
        # Beside a visible object, whose size is given (on a git that serves object-info).
        return post(scene, "upload-pack", object_info_request(scene.visible_blob, oid), who=who, v2=True)

    for who in viewers(scene):
        for hidden in hidden_ids(scene):
            same_as_unknown(lambda oid, w=who: info(oid, w), hidden)
            same_as_unknown(lambda oid, w=who: info(oid.upper(), w), hidden)


def test_deepen_not_names_no_hidden_ref_whether_or_not_it_exists(scene):
    for who in viewers(scene):
        answers = set()
        for name in ("refs/users/alice/feature", "refs/users/alice/nothing", "users/alice/feature"):
            status, body = v2(
                scene, "fetch", f"want {scene.base_sha}\n", f"deepen-not {name}\n", "done\n", who=who
            )
            assert status == 400 and b"PACK" not in body, (name, status, body)
            answers.add(body.replace(name.encode(), b"NAME"))
        assert len(answers) == 1, answers
    # A visible ref is a boundary as git makes it.
    status, body = v2(scene, "fetch", f"want {scene.base_sha}\n", "deepen-not nothing-here\n", "done\n")
    assert status == 200


def test_ls_refs_lists_no_hidden_namespace(scene):
    for who in viewers(scene):
        for prefix in ("refs/users/alice/", "refs/takedown/", "refs/archive/", "refs/"):
            status, body = v2(scene, "ls-refs", f"ref-prefix {prefix}\n", who=who)
            assert status == 200, body
            assert b"refs/users/alice" not in body and b"refs/takedown" not in body, (prefix, body)
            assert scene.sha.encode() not in body
