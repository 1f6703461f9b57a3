"""Who hears of each proposal event (reviews.events), with real git and the real writers: the
actor never; readers who may not see the repository or the proposal never; muted and
inactive users never; mentions only outside code."""

from __future__ import annotations

import pytest

from notifications import services as notification_services
from notifications.models import Notification, Subscription
from repos import services as repo_services
from repos.models import Role, Visibility
from reviews import events, merge, services
from tests.eager import run_followers
from tests.factories import UserFactory
from tests.reviews.conftest import Scene
from workspaces import moderation

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(tmp_path, git_home, monkeypatch) -> Scene:
    run_followers(monkeypatch)  # a merge records a push; its follow-up tasks run here, not in a worker
    return Scene(tmp_path, git_home)


@pytest.fixture
def now(django_capture_on_commit_callbacks):
    """Run the block's on-commit callbacks (where notifications are recorded) at its end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def told(kind: str | None = None) -> dict[str, str]:
    rows = Notification.objects.select_related("user")
    if kind:
        rows = rows.filter(kind=kind)
    return {n.user.username: n.kind for n in rows}


def open_proposal(scene, now) -> object:
    scene.checkout("feature", "main")
    scene.commit("feature", {"b.txt": "bee\n"})
    scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    with now():
        return services.proposal_open(
            repo=scene.repo,
            user=scene.alice,
            source_ref="refs/users/alice/feature",
            target_branch="main",
            title="Add <b>bee</b>",
            description="Why: because.",
        )


def test_opened_tells_maintainers_and_watchers_not_the_actor_muted_or_inactive(scene, now):
    carol = UserFactory(username="carol")  # watches the repository, no role
    gone = UserFactory(username="gone", is_active=False)
    repo_services.membership_set(repo=scene.repo, user=gone, role=Role.MAINTAINER)
    quiet = UserFactory(username="quiet")
    repo_services.membership_set(repo=scene.repo, user=quiet, role=Role.ADMIN)
    repo_subject = f"repository:{scene.repo.pk}"
    notification_services.subscription_set(user=carol, subject=repo_subject, subscribed=True)
    notification_services.subscription_set(user=quiet, subject=repo_subject, subscribed=False)
    proposal = open_proposal(scene, now)
    assert told() == {"owner": "proposal_opened", "maint": "proposal_opened", "carol": "proposal_opened"}
    note = Notification.objects.get(user=scene.maint)
    assert note.subject == f"proposal:{proposal.pk}" and note.actor == scene.alice
    assert note.text == "alice opened proposal #1 on owner/project: Add <b>bee</b>"
    assert note.url == "/owner/project/proposals/1" and note.body == "Why: because."
    # The author follows what they opened.
    assert Subscription.objects.get(user=scene.alice, subject=f"proposal:{proposal.pk}").subscribed


def test_private_repository_watchers_without_access_hear_nothing(scene, now):
    scene.repo.visibility = Visibility.PRIVATE
    scene.repo.save(update_fields=["visibility"])
    repo_services.membership_set(repo=scene.repo, user=scene.alice, role=Role.READER)
    outsider = UserFactory(username="outsider")
    Subscription.objects.create(user=outsider, subject=f"repository:{scene.repo.pk}")
    proposal = open_proposal(scene, now)
    assert "outsider" not in told()
    assert set(told()) == {"owner", "maint"}
    # Mentioned, yet may not read the repository: not told (nor that the proposal exists).
    Notification.objects.all().delete()
    with now():
        services.comment_add(proposal=proposal, user=scene.maint, body="@outsider @alice see this")
    assert told() == {"alice": "mention"}


def test_review_requested_tells_that_user_who_then_follows(scene, now):
    proposal = open_proposal(scene, now)
    Notification.objects.all().delete()
    with now():
        events.review_requested(proposal, user=scene.bob, actor=scene.maint)
        events.review_requested(proposal, user=scene.maint, actor=scene.maint)  # asked themselves
    assert told() == {"bob": "review_requested"}
    assert Notification.objects.get().text.startswith("maint asked you to review proposal #1")
    assert Subscription.objects.filter(user=scene.bob, subject=f"proposal:{proposal.pk}").exists()
    with now():
        events.review_requested(proposal, user=scene.owner, actor=None)
    assert Notification.objects.get(user=scene.owner).text.startswith("As a code owner, please review")


def test_comment_tells_author_participants_followers_and_mentions_outside_code(scene, now):
    UserFactory(username="carol")
    dave = UserFactory(username="dave")
    erin = UserFactory(username="erin")
    proposal = open_proposal(scene, now)
    Notification.objects.all().delete()
    follower = UserFactory(username="fay")
    Subscription.objects.create(user=follower, subject=f"proposal:{proposal.pk}")
    body = (
        "Thanks @bob and @Carol, mail me at maint@example.invalid.\n"
        "`@dave` in a span, and:\n"
        "```\n@erin in a fence\n```\n"
        "    @erin indented\n"
        "@nobody-here and @alice"
    )
    with now():
        comment = services.comment_add(proposal=proposal, user=scene.maint, body=body)
    assert told() == {"alice": "mention", "bob": "mention", "carol": "mention", "fay": "comment"}
    note = Notification.objects.get(user=scene.bob)
    assert note.text == "maint mentioned you in #1 on owner/project: Add <b>bee</b>"
    assert note.body == body and note.url == f"/owner/project/proposals/1#comment-{comment.pk}"
    assert {dave.pk, erin.pk}.isdisjoint(Notification.objects.values_list("user_id", flat=True))
    # The commenter now follows, and hears of the author's reply as a participant.
    Notification.objects.all().delete()
    with now():
        services.comment_add(proposal=proposal, user=scene.alice, body="Done.")
    assert told() == {"maint": "comment", "fay": "comment"}


def test_mentions_parse_table():
    assert events.mentioned_usernames("@a, @b-c. (@d) x@e @f/g `@h` ``x `@i` y`` @J") == [
        "a",
        "b-c",
        "d",
        "j",
    ]
    assert events.mentioned_usernames("~~~\n@a\n~~~\n```\n@b\n```\n@c") == ["c"]
    assert events.mentioned_usernames("```\n@a never closed") == []
    assert events.mentioned_usernames("@-no @x- @" + "y" * 40) == []
    assert len(events.mentioned_usernames(" ".join(f"@u{i}" for i in range(80)))) == events.MENTIONS_MAX


def test_muted_proposal_hears_nothing_and_is_not_followed_again(scene, now):
    proposal = open_proposal(scene, now)
    notification_services.subscription_set(
        user=scene.alice, subject=f"proposal:{proposal.pk}", subscribed=False
    )
    Notification.objects.all().delete()
    with now():
        services.comment_add(proposal=proposal, user=scene.maint, body="@alice look")
        services.proposal_approve(proposal=proposal, user=scene.maint)
        events.conflict_appeared(proposal, files=["a.txt"])
    # maint follows since commenting: only alice, who muted it, hears nothing.
    assert told() == {"maint": "conflict"}
    with now():
        services.comment_add(proposal=proposal, user=scene.alice, body="still muted")
    assert not Subscription.objects.get(user=scene.alice, subject=f"proposal:{proposal.pk}").subscribed


def test_approved_and_merged_tell_author_and_participants(scene, now):
    proposal = open_proposal(scene, now)
    with now():
        services.comment_add(proposal=proposal, user=scene.bob, body="LGTM")
    Notification.objects.all().delete()
    with now():
        services.proposal_approve(proposal=proposal, user=scene.maint)
    assert told() == {"alice": "approved", "bob": "approved"}
    Notification.objects.all().delete()
    with now():
        merge.proposal_merge(proposal=proposal, user=scene.owner, strategy="merge")
    assert told() == {"alice": "merged", "bob": "merged", "maint": "merged"}
    assert Notification.objects.get(user=scene.alice).text.startswith(
        "owner merged proposal #1 on owner/project into main: Add"
    )


def test_conflict_and_failed_check_tell_author_and_followers(scene, now):
    proposal = open_proposal(scene, now)
    Subscription.objects.create(user=scene.bob, subject=f"proposal:{proposal.pk}")
    Notification.objects.all().delete()
    with now():
        events.conflict_appeared(proposal, files=[f"f{i}.txt" for i in range(7)])
    assert told() == {"alice": "conflict", "bob": "conflict"}
    assert Notification.objects.first().text == (
        "Proposal #1 on owner/project no longer merges cleanly into main "
        "(conflicts in f0.txt, f1.txt, f2.txt, f3.txt, f4.txt and 2 more): Add <b>bee</b>"
    )
    Notification.objects.all().delete()
    with now():
        events.check_failed(proposal, context="ci/tests", state="failure", target_url="https://ci.example/1")
    assert told() == {"alice": "check_failed", "bob": "check_failed"}
    assert Notification.objects.get(user=scene.alice).text.startswith(
        "Check ci/tests is failure on proposal #1"
    )


def test_hidden_proposal_is_told_only_to_those_who_may_see_it(scene, now):
    proposal = open_proposal(scene, now)
    for user in (scene.bob, scene.maint, scene.owner):
        Subscription.objects.create(user=user, subject=f"proposal:{proposal.pk}")
    with now():
        moderation.do_hide_workspace(
            repo=scene.repo, user=scene.alice, acting_user=scene.owner, reason="spam"
        )
    Notification.objects.all().delete()
    with now():
        events.check_failed(proposal, context="ci", state="error")
    # Hidden workspaces are seen by their owner, the repository's admins and staff only.
    assert told() == {"alice": "check_failed", "owner": "check_failed"}


def test_an_error_while_notifying_never_reaches_the_writer(scene, now, monkeypatch, caplog):
    proposal = open_proposal(scene, now)

    def broken(*args, **kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(notification_services, "notify", broken)
    with now():
        comment = services.comment_add(proposal=proposal, user=scene.maint, body="still saved")
    assert comment.pk and "notifications for _comment_added failed" in caplog.text


def test_nothing_is_told_when_the_writer_rolls_back(scene, now):
    from django.db import transaction

    proposal = open_proposal(scene, now)
    Notification.objects.all().delete()
    with now():
        try:
            with transaction.atomic():
                services.comment_add(proposal=proposal, user=scene.maint, body="never")
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
    assert told() == {}
