"""Signals other apps listen to (reviews marks a proposal merged when its ref is archived)."""

from django.dispatch import Signal

# sender=ArchivedRef; repository_id, ref, sha, push_id (or None), reason
workspace_ref_archived = Signal()

# Sent after a moderation action that changes what readers may see of a workspace commits
# (hide, unhide, take down, lift, restore, purge): sender=Workspace; repository_id, username,
# action. search takes what became unreadable out of its index, and puts back what returned.
workspace_moderated = Signal()

# Sent inside the transaction that renamed workspace refs (workspaces.refmigration):
# sender=RefRename; repository_id, renames ({old ref: new ref}). Rows of other apps that name
# those refs (proposals' source refs) follow in the same transaction.
workspace_refs_renamed = Signal()
