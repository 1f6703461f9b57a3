"""Signals other apps subscribe to, so repos never imports them (workspaces and bundles use
repos, not the other way round)."""

import logging

from django.dispatch import Signal

log = logging.getLogger(__name__)

# Sent after the push's transaction commits. kwargs: push_id, repository_id.
push_recorded = Signal()

# Sent after a change of a repository's visibility commits. kwargs: repository_id, old, new.
visibility_changed = Signal()

# Sent after a soft delete commits. kwargs: repository_id. workspaces tells contributors with
# unmerged work (issue 8).
repository_deleted = Signal()

# Sent inside the purge, before the repository's row is deleted (its rows still exist). A
# receiver that raises stops this purge; the next periodic run retries. kwargs: repository.
# bundles deletes the repository's bundle objects from storage here.
repository_purging = Signal()

# Sent after a pull mirror's sync commits a change of health: the first failure of a streak
# (failing=True, error: why) or the first success after failures (failing=False). kwargs:
# repository_id, failing, error. notifications tells the repository's admins (repos.mirrors).
mirror_status_changed = Signal()


def send_logged(signal: Signal, sender: type, **kwargs) -> None:
    """Send to every receiver after the change committed: it stands whatever a receiver does,
    so one that raises is logged (once, with its traceback) and the others still run."""
    for receiver, result in signal.send_robust(sender=sender, **kwargs):
        if isinstance(result, Exception):
            log.error(
                "receiver %s of %s failed (%s)",
                getattr(receiver, "__qualname__", receiver),
                getattr(receiver, "__module__", "?"),
                ", ".join(f"{key}={value}" for key, value in kwargs.items()),
                exc_info=result,
            )
