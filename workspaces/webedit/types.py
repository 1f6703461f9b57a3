"""The web editor's interface between the service (service.py) and the pages (views.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["edit", "add", "upload", "delete"]
Target = Literal["workspace", "branch"]


@dataclass(frozen=True)
class FileChange:
    """One file operation. `path` is the path in the tree as the user gave it (validated by the
    service). `content` is the new bytes (text from the editor, as typed: the service restores
    the file's line endings and encoding) for edit/add/upload, None for delete. `expected_blob`
    is the blob id the page showed (edit, delete, and upload over an existing file): if the
    file changed since, the service raises Conflict, never overwrites."""

    kind: Kind
    path: str
    content: bytes | None = None
    expected_blob: str | None = None


@dataclass(frozen=True)
class EditRequest:
    repository: Any  # repos.models.Repository
    user: Any  # the signed-in editor
    base_ref: str  # where the page was: a branch name, or a full ref (refs/users/<u>/<name>)
    base_commit: str  # the commit the page was loaded at: the edit applies on it
    changes: tuple[FileChange, ...]
    message: str  # the commit message (subject, blank line, body); CR/LF normalised
    target: Target = "workspace"
    # workspace: the ref's name under refs/users/<editor>/ (a new or the editor's existing ref);
    # branch: ignored (the branch is base_ref). Proposal edits pass the proposal's full ref.
    name: str = ""
    host: str = ""  # the request's host, for the default noreply e-mail address


@dataclass(frozen=True)
class EditResult:
    ref: str  # the full ref that now holds the commit
    commit: str
    created: bool  # the ref did not exist before
    push_id: int | None  # the Push record (protocol "web") that recorded the ref change
    proposal_url: str | None = None  # "open a proposal" URL (prefilled), None for a branch commit


@dataclass(frozen=True)
class Editable:
    """What the editor may show for one file at one commit."""

    path: str
    blob: str | None  # None: the file does not exist there
    mode: str = "100644"
    text: str | None = None  # decoded content, with '\n' line endings; None when not editable
    binary: bool = False
    too_large: bool = False  # over settings.WEB_EDIT_MAX_BYTES (1 MiB): view only
    eol: Literal["lf", "crlf", "mixed"] = "lf"
    encoding: str = "utf-8"
    reasons: list[str] = field(default_factory=list)  # why it cannot be edited, for the page
