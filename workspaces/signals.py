"""Signals other apps listen to (reviews marks a proposal merged when its ref is archived)."""

from django.dispatch import Signal

# sender=ArchivedRef; repository_id, ref, sha, push_id (or None), reason
workspace_ref_archived = Signal()
