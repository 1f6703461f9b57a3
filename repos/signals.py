"""Signals other apps subscribe to, so repos never imports them (workspaces and bundles use
repos, not the other way round).

Each is sent after the change it reports has committed, with `send_robust`: the change stands
whatever a receiver does, so one that raises must not stop the others. Django logs each
failing receiver once, with its traceback (the `django.dispatch` logger)."""

from django.dispatch import Signal

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
# repository_id, failing, error. notifications tells the repository's admins (sources.mirrors).
mirror_status_changed = Signal()

# Sent after a commit status is stored (repos.statuses). kwargs: repository_id, sha, context,
# state, previous_state ("" when the context is new). reviews tells a proposal's author of a
# failing check and re-evaluates merge rules and auto-merge.
commit_status_changed = Signal()

# Sent after a change appended to the replication log commits (repos.changelog). kwargs:
# change_id, repository_id, generation, kind, actor_id (None for the platform's own). replication sends each live replica its job.
repository_changed = Signal()

# Sent while a push's response is still open, after the push is recorded (repos.pipeline.push),
# with `send_robust`. kwargs: repository_id, generation (the push's in the log). A receiver may
# block (replication waits for REPLICATION_MIN_ACKS replicas to hold it) and may return a
# line for the client, which it sees as `remote: <line>`.
push_acknowledging = Signal()
