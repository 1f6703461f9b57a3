"""What the editor may do with one tree entry: edit its text, only replace it by upload, or
nothing (a directory, a symbolic link, a submodule)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from workspaces.webedit import text, trees
from workspaces.webedit.types import Editable

CANONICAL_MODES = {"100755": "100755", "120000": "120000", "160000": "160000"}
BINARY = "This is a binary file (or not UTF-8 text): upload a new version to replace it."


def not_a_file(mode: str) -> str:
    what = "a symbolic link" if mode == "120000" else "a submodule"
    return f"This is {what}: it cannot be edited here."


def too_large(limit: int) -> str:
    return f"This file is larger than {limit // 1024} KiB: it is view-only here."


def describe(repo: Path, path: str, entry: trees.Entry | None) -> tuple[Editable, text.Decoded | None]:
    """The Editable for the page, and the decoded content when the text may be edited."""
    if entry is None:
        return Editable(path=path, blob=None, reasons=["This file does not exist at this commit."]), None
    # Legacy modes (100664...) are regular files; the page shows them as git does.
    mode = "040000" if entry.is_tree else CANONICAL_MODES.get(entry.mode, "100644")
    if entry.is_tree:
        return Editable(path=path, blob=None, mode=mode, reasons=["This is a directory."]), None
    if not entry.is_file:
        return Editable(path=path, blob=entry.oid, mode=mode, reasons=[not_a_file(mode)]), None
    limit = settings.WEB_EDIT_MAX_BYTES
    if trees.object_size(repo, entry.oid) > limit:
        return Editable(
            path=path, blob=entry.oid, mode=mode, too_large=True, reasons=[too_large(limit)]
        ), None
    decoded = text.decode(trees.read_blob(repo, entry.oid))
    if decoded is None:
        return Editable(path=path, blob=entry.oid, mode=mode, binary=True, reasons=[BINARY]), None
    if decoded.stray_cr:
        reason = "This file holds carriage returns that end no line, which a browser would change: upload it instead."
        found = Editable(
            path=path, blob=entry.oid, mode=mode, eol=decoded.eol, encoding=decoded.encoding, reasons=[reason]
        )
        return found, None
    found = Editable(
        path=path,
        blob=entry.oid,
        mode=mode,
        text=decoded.editor_text,
        eol=decoded.eol,
        encoding=decoded.encoding,
    )
    return found, decoded
