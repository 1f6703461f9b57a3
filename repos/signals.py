"""Signals other apps subscribe to, so repos never imports them (workspaces and bundles use
repos, not the other way round)."""

from django.dispatch import Signal

# Sent after the push's transaction commits. kwargs: push_id, repository_id.
push_recorded = Signal()

# Sent after a change of a repository's visibility commits. kwargs: repository_id, old, new.
visibility_changed = Signal()
