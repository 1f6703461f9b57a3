"""Moving nameless heads of the old layout (refs/users/<u>/<branch>/<12 hex>) to the current one
(refs/users/<u>/<branch>-<12 hex>): git and every row naming them follow, old page URLs
redirect, a second run changes nothing, and afterwards the owner's branch push of `main` lands.

Real git with the real hooks (test_nameless_property.Hosted); the old layout is made as it was
left on disk by earlier releases: a nameless push's head, renamed back, with its push options."""

from __future__ import annotations

import pytest
from django.test import Client

from repos.models import Push
from reviews import services as review_services
from reviews.models import Proposal
from tests.workspaces.test_nameless_property import LANDED, Hosted
from workspaces import cleanup, refmigration
from workspaces.models import ArchivedRef, RefRename

pytestmark = pytest.mark.django_db


def legacy_head(h: Hosted, user: str, message: str) -> tuple[str, str]:
    """A nameless head for main in the old layout: (ref, sha)."""
    h.start_at("refs/remotes/h/main")
    sha = h.commit(message)
    code, out = h.push(h.users[user], "refs/for/main")
    assert code == 0, out
    current = dict(LANDED.findall(out))["refs/for/main"]
    old = f"refs/users/{h.users[user].username}/main/{sha[:12]}"
    h.hosted("update-ref", old, sha)
    h.hosted("update-ref", "-d", current, sha)
    for push in Push.objects.filter(repository=h.repo):
        options = [o.replace(current, old) for o in push.push_options]
        Push.objects.filter(pk=push.pk).update(push_options=options)
    return old, sha


def test_old_nameless_heads_move_and_everything_that_names_them_follows(tmp_path, git_home):
    h = Hosted(tmp_path, git_home)
    alice = h.users["alice"]
    proposed, proposed_sha = legacy_head(h, "alice", "proposed work")
    landed, landed_sha = legacy_head(h, "alice", "work that lands")
    proposal = review_services.proposal_open(
        repo=h.repo, user=alice, source_ref=proposed, target_branch="main", title="Proposed"
    )
    # The owner merges the second head: cleanup archives it under its old name.
    h.do_merge(sorted(h.workspace("alice")).index(landed), False)
    archived = ArchivedRef.objects.get(repository=h.repo, ref=landed)
    # A ref of the old shape that a plain push created is its owner's name: it stays.
    h.start_at("refs/remotes/h/main")
    plain_sha = h.commit("bob's own name")
    plain = f"refs/users/{h.users['bob'].username}/main/{plain_sha[:12]}"
    assert h.push(h.users["bob"], plain)[0] == 0

    assert refmigration.repository_migrate_nameless(repo=h.repo) == 1  # the archived one is not in git
    new_proposed = f"refs/users/{alice.username}/main-{proposed_sha[:12]}"
    new_landed = f"refs/users/{alice.username}/main-{landed_sha[:12]}"
    refs = h.refs()
    assert refs[new_proposed] == proposed_sha and proposed not in refs
    assert refs[plain] == plain_sha
    assert Proposal.objects.get(pk=proposal.pk).source_ref == new_proposed
    assert ArchivedRef.objects.get(pk=archived.pk).ref == new_landed
    options = [o for p in Push.objects.filter(repository=h.repo) for o in p.push_options]
    assert f"hostsite.for={new_proposed} main" in options
    assert not any(proposed in o or landed in o for o in options)
    assert set(RefRename.objects.filter(repository=h.repo).values_list("old_ref", "new_ref")) == {
        (proposed, new_proposed),
        (landed, new_landed),
    }
    # The pushlog has the rename (a deletion and a creation by the platform), so
    # reconciliation finds no unrecorded ref.
    rename = Push.objects.filter(repository=h.repo).latest("pk")
    assert rename.pusher_name == "system"
    assert {(u.ref, u.new == proposed_sha) for u in rename.ref_updates.all()} == {
        (proposed, False),
        (new_proposed, True),
    }

    # Again (a redelivered task): nothing moves, nothing changes.
    before = (h.refs(), list(RefRename.objects.values_list("old_ref", "new_ref", "applied_at")))
    pushes = Push.objects.count()
    assert refmigration.repository_migrate_nameless(repo=h.repo) == 0
    assert before == (h.refs(), list(RefRename.objects.values_list("old_ref", "new_ref", "applied_at")))
    assert Push.objects.count() == pushes

    # The old page of the head redirects to the new one.
    base = f"/{h.owner.username}/{h.repo.name}/workspaces/{alice.username}"
    response = Client().get(f"{base}/{proposed.removeprefix(f'refs/users/{alice.username}/')}")
    assert response.status_code == 302
    assert response["Location"] == f"{base}/{new_proposed.removeprefix(f'refs/users/{alice.username}/')}"
    stack = f"/{h.owner.username}/{h.repo.name}/work/stack/"
    response = Client().get(stack + proposed.removeprefix("refs/users/"))
    assert response.status_code == 302 and response["Location"] == stack + new_proposed.removeprefix(
        "refs/users/"
    )

    # What the old layout refused: the owner's branch push of main, then a nameless push that
    # builds on the renamed head (nameless pushes wrote it, the rewritten options say).
    h.start_at("refs/remotes/h/main")
    main_sha = h.commit("alice on main")
    code, out = h.push(alice, "refs/heads/main")
    assert code == 0, out
    assert h.refs()[f"refs/users/{alice.username}/main"] == main_sha
    h.start_at(new_proposed.replace("refs/users/", "refs/remotes/u/", 1))
    more = h.commit("more proposed work")
    code, out = h.push(alice, "refs/for/main")
    assert code == 0, out
    assert dict(LANDED.findall(out))["refs/for/main"] == new_proposed and h.refs()[new_proposed] == more
    # And the archived head comes back under its new name.
    assert cleanup.restore(ArchivedRef.objects.get(pk=archived.pk), user=alice) == new_landed
    assert h.refs()[new_landed] == landed_sha
