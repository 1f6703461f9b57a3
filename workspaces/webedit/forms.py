"""The web editor's forms: what its pages post, checked for shape before the service judges
it (paths, names, messages and who may write where are the service's to refuse)."""

from __future__ import annotations

from django import forms
from django.conf import settings

from gitcore.oids import is_printed_id

MESSAGE_MAX = 10_000
NAME_MAX = 200
# Uploads: per file the edit limit (settings.WEB_EDIT_MAX_BYTES: a larger file is view-only),
# at most this many files, and settings.WEB_UPLOAD_MAX_BYTES in all, checked before the body
# is read (plus room for the form's other fields and the multipart framing).
UPLOAD_MAX_FILES = 20
UPLOAD_FRAMING = 64 * 1024


def upload_total_max() -> int:
    return settings.WEB_UPLOAD_MAX_BYTES


def _is_id(value: str) -> None:
    if not is_printed_id(value):
        raise forms.ValidationError("Not an object id.", code="invalid")


def _oid_field() -> forms.CharField:
    # The shape only: the service reads the id for the repository's format.
    return forms.CharField(widget=forms.HiddenInput, validators=[_is_id])


class CommitForm(forms.Form):
    """What every editor page posts: the commit message, where the commit goes, and the
    commit the page was loaded at (the edit applies on it)."""

    message = forms.CharField(
        label="Commit message",
        max_length=MESSAGE_MAX,
        widget=forms.Textarea(attrs={"rows": 3, "class": "commit-message"}),
    )
    target = forms.ChoiceField(label="Where the commit goes", widget=forms.RadioSelect)
    name = forms.CharField(
        label="Name in your workspace",
        max_length=NAME_MAX,
        required=False,
        help_text="A new or one of your existing workspace refs.",
    )
    base_commit = _oid_field()

    def __init__(self, *args, targets: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = targets  # type: ignore[attr-defined]  # a ChoiceField

    def clean(self):
        data = super().clean()
        if data.get("target") == "workspace" and not (data.get("name") or "").strip():
            self.add_error("name", "Name the workspace ref the commit goes to.")
        return data


class EditForm(CommitForm):
    content = forms.CharField(
        label="Content",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 24, "class": "editor", "spellcheck": "false", "wrap": "off"}),
    )
    expected_blob = _oid_field()
    field_order = ["content", "message", "target", "name"]


class AddForm(CommitForm):
    filename = forms.CharField(
        label="File name",
        max_length=4096,
        strip=False,
        help_text="In this directory; use / for subdirectories (docs/intro.md).",
    )
    content = forms.CharField(
        label="Content",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 24, "class": "editor", "spellcheck": "false", "wrap": "off"}),
    )
    field_order = ["filename", "content", "message", "target", "name"]


class DeleteForm(CommitForm):
    expected_blob = _oid_field()


class UploadForm(CommitForm):
    """The files themselves come from request.FILES ("files", several); see upload_names."""


def upload_name(raw: str) -> str:
    """The last part of a file name the browser sent: some send a whole path (C:\\x\\y.txt),
    and none of it may choose the directory. The service validates what is left."""
    return raw.replace("\\", "/").rsplit("/", 1)[-1]
