"""What moderation takes out of the index, and puts back when it is lifted.

A take-down deletes the rows of the workspace's proposals in the take-down's own transaction
(receivers.on_take_down). After any moderation action has committed, this brings the
repository's proposal rows in line with its taken-down workspaces and deletes the commit rows
that only moderated refs reach. Hidden (not taken-down) workspaces keep their rows: their
owner and the repository's admins still see them, and every query filters them for the
others through the viewer's View (search.backend)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser

from repos.models import Repository
from repos.visibility import view_for
from search import documents
from search.models import CommitEntry
from workspaces import selectors as workspace_selectors


def index_follow_moderation(*, repo: Repository) -> str:
    taken_down = frozenset(workspace_selectors.taken_down_usernames(repo))
    documents.resync_proposals(repo=repo, taken_down=taken_down)
    view = view_for(repo, AnonymousUser())
    hidden = view.hidden_set() if view.restricts else frozenset()
    forgotten = 0
    if hidden:
        indexed = set(CommitEntry.objects.filter(repository=repo).values_list("sha", flat=True).iterator())
        forgotten = documents.forget_commits(repo_id=repo.pk, shas=indexed & hidden)
    return f"proposals resynced; {forgotten} commits forgotten"
