"""The file changes of one web edit, checked and turned into tree changes.

Each change is judged three times: on its own (kind, path, size), against the commit the page
was loaded at (`base`: an edit needs the file there, an add needs the name free), and against
where the ref is now (`tip`): if the file is not what the page showed, the edit is stale and
refused with Conflict, never applied over someone else's change. A change whose file did not
move still applies, on whatever commit the service builds on (`parent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from gitcore.oids import is_printed_id
from repos.errors import Conflict, InvalidInput
from repos.hooks.refnames import shown
from workspaces.webedit import files, paths, text, trees
from workspaces.webedit.types import FileChange

MAX_CHANGES = 100
KINDS = ("edit", "add", "upload", "delete")


@dataclass(frozen=True)
class Checked:
    change: FileChange
    raw: bytes  # the path as git gets it

    @property
    def shown(self) -> str:
        return shown(self.change.path)[:300]


def check_request(changes: Sequence[FileChange]) -> list[Checked]:
    """The changes with their paths checked, or InvalidInput: no change, too many, an unknown
    kind, a bad path, one path given twice or inside another, too many bytes."""
    if not changes:
        raise InvalidInput("Nothing to commit: no file was changed.", code="no_changes")
    if len(changes) > MAX_CHANGES:
        raise InvalidInput(f"At most {MAX_CHANGES} files can change in one web commit; push the rest.")
    checked, total = [], 0
    for change in changes:
        if change.kind not in KINDS:
            raise InvalidInput(f"Unknown change {str(change.kind)[:20]!r}.", fields={"kind": ["invalid"]})
        if (change.content is None) != (change.kind == "delete"):
            raise InvalidInput("A deletion has no content, and every other change has some.")
        if change.expected_blob is not None and not is_printed_id(change.expected_blob):
            raise InvalidInput(
                "The expected blob is not a full object id.", fields={"expected_blob": ["invalid"]}
            )
        raw = paths.check_path(change.path, new=change.kind in ("add", "upload"))
        size = len(change.content or b"")
        if change.kind in ("edit", "add") and size > settings.WEB_EDIT_MAX_BYTES:
            raise InvalidInput(
                f"{shown(change.path)[:300]!r} is larger than the editor's limit "
                f"({settings.WEB_EDIT_MAX_BYTES // 1024} KiB): upload it instead.",
                code="too_large",
            )
        total += size
        checked.append(Checked(change, raw))
    if total > settings.WEB_UPLOAD_MAX_BYTES:
        raise InvalidInput(
            f"The files add up to more than {settings.WEB_UPLOAD_MAX_BYTES // (1024 * 1024)} MiB, "
            "the limit of one web commit: push them with git.",
            code="too_large",
        )
    names = {c.raw for c in checked}
    if len(names) != len(checked):
        raise InvalidInput("The same file is changed twice in one commit.", fields={"path": ["duplicate"]})
    for c in checked:
        if any(p in names for p in paths.prefixes(c.raw)):
            raise InvalidInput(f"{c.shown!r} is inside another file or directory this commit changes.")
    return checked


def _state(entry: trees.Entry | None) -> tuple[str, str] | None:
    return (entry.oid, entry.mode) if entry else None


def plan(
    repo: Path, checked: list[Checked], *, base: str, tip: str, parent: str
) -> dict[bytes, trees.Change]:
    """{path: tree change} for trees.rewrite on `parent`, with the new blobs written."""
    names = [c.raw for c in checked]
    around = names + [p for n in names for p in paths.prefixes(n)]
    at_base = trees.entries_at(repo, base, around)
    at_tip = at_base if tip == base else trees.entries_at(repo, tip, names)
    at_parent = at_base if parent == base else trees.entries_at(repo, parent, around)
    planned: dict[bytes, trees.Change] = {}
    for c in checked:
        before = at_base.get(c.raw)
        _check_against_base(c, before, at_base)
        if _state(at_tip.get(c.raw)) != _state(before):
            raise Conflict(
                f"{c.shown!r} changed since you loaded the page (someone pushed meanwhile): reload "
                "it and make your change again. Nothing was committed.",
                code="stale_edit",
                fields={"path": [c.change.path]},
            )
        for prefix in paths.prefixes(c.raw):
            entry = at_parent.get(prefix)
            if entry is not None and not entry.is_tree:
                raise Conflict(
                    f"{shown(paths.from_bytes(prefix))!r} became a file meanwhile: reload the page."
                )
        planned[c.raw] = _new_entry(repo, c, before)
    return planned


def _check_against_base(c: Checked, before: trees.Entry | None, at_base: dict[bytes, trees.Entry]) -> None:
    kind, expected = c.change.kind, c.change.expected_blob
    if expected is not None and (before is None or before.oid != expected):
        raise Conflict(
            f"{c.shown!r} is not the version the page showed: reload it and make your change again.",
            code="stale_edit",
            fields={"path": [c.change.path]},
        )
    for prefix in paths.prefixes(c.raw):
        entry = at_base.get(prefix)
        if entry is not None and not entry.is_tree:
            raise InvalidInput(
                f"{c.shown!r} cannot be created: {shown(paths.from_bytes(prefix))!r} is a file, not a directory.",
                fields={"path": ["collides"]},
            )
    if kind in ("edit", "delete") and before is None:
        raise InvalidInput(
            f"{c.shown!r} does not exist here: there is nothing to {kind}.", fields={"path": ["missing"]}
        )
    if kind == "add" and before is not None:
        what = "a directory" if before.is_tree else "a file"
        raise InvalidInput(
            f"{c.shown!r} already exists as {what}: edit it, or choose another name.",
            fields={"path": ["exists"]},
        )
    if kind in ("edit", "upload") and before is not None and not before.is_file:
        what = (
            "a directory"
            if before.is_tree
            else "a symbolic link"
            if before.mode == "120000"
            else "a submodule"
        )
        raise InvalidInput(
            f"{c.shown!r} is {what}: it cannot be {kind}ed on the web.", fields={"path": ["not a file"]}
        )


def _new_entry(repo: Path, c: Checked, before: trees.Entry | None) -> trees.Change:
    change = c.change
    if change.kind == "delete":
        return None
    assert change.content is not None
    if change.kind == "upload":
        data, mode = change.content, before.mode if before else "100644"
    elif change.kind == "add":
        data, mode = text.encode(change.content), "100644"
    else:
        assert before is not None
        decoded = _editable_text(repo, c, before)
        data = text.encode(
            change.content, encoding=decoded.encoding, eol=decoded.eol, crlf=decoded.crlf, lf=decoded.lf
        )
        mode = before.mode
    if change.kind != "upload" and len(data) > settings.WEB_EDIT_MAX_BYTES:
        raise InvalidInput(
            f"{c.shown!r} would be larger than the editor's limit: upload it instead.", code="too_large"
        )
    return mode, trees.write_blob(repo, data)


def _editable_text(repo: Path, c: Checked, before: trees.Entry) -> text.Decoded:
    """The file's text as it is, to restore its encoding and line endings; InvalidInput saying
    why when the editor cannot change it (binary, too large, stray carriage returns)."""
    found, decoded = files.describe(repo, c.change.path, before)
    if decoded is None:
        code = "too_large" if found.too_large else "binary" if found.binary else "not_editable"
        raise InvalidInput(f"{c.shown!r}: {found.reasons[0]}", code=code)
    return decoded
