"""git's progress reaches a fetch's caller line by line, not sampled: on a busy machine a small
fetch passes every phase between two polls, and the mirror sync counts its objects from the
phases that came before the last one."""

from __future__ import annotations

import subprocess

from sources import fetching, mirror_sync

STDERR = (
    "remote: Enumerating objects: 12, done.\n"
    "remote: Counting objects:  50% (6/12)\rremote: Counting objects: 100% (12/12), done.\n"
    "remote: Compressing objects: 100% (6/6), done.\n"
    "remote: Total 12 (delta 1), reused 0 (delta 0), pack-reused 0\n"
)


def test_every_update_is_kept_for_the_caller_in_order():
    # Everything is written before anyone looks, as when the caller's poll comes late.
    writer = subprocess.Popen(["sh", "-c", 'printf "%s" "$0" >&2', STDERR], stderr=subprocess.PIPE)
    reader = fetching._StderrReader(writer, echo=False)
    reader.start()
    writer.wait()
    reader.join(timeout=10)
    updates = reader.take()
    assert [(u.phase, u.done, u.total) for u in updates] == [
        ("Enumerating objects", 12, 0),
        ("Counting objects", 6, 12),
        ("Counting objects", 12, 12),
        ("Compressing objects", 6, 6),
    ]
    assert reader.progress.phase == "Compressing objects"  # the latest alone would lose the count
    assert reader.take() == []
    counter = mirror_sync._ObjectCounter()
    for update in updates:
        counter(update)
    assert counter.objects == 12
