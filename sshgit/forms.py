"""The key forms: the page's fields only; sshgit.services validates and refuses."""

from __future__ import annotations

from django import forms

from sshgit.keyparse import MAX_TEXT
from sshgit.services import TITLE_MAX


class KeyForm(forms.Form):
    title = forms.CharField(
        max_length=TITLE_MAX,
        required=False,
        help_text="Blank: the key's comment (the text after the key, often user@host).",
    )
    key = forms.CharField(
        max_length=MAX_TEXT,
        strip=False,
        widget=forms.Textarea(
            attrs={
                "rows": 5,
                "spellcheck": "false",
                "autocomplete": "off",
                "class": "mono",
                "placeholder": "ssh-ed25519 AAAA… you@laptop",
            }
        ),
        help_text="The contents of your .pub file, e.g. ~/.ssh/id_ed25519.pub: one line.",
    )


class DeployKeyForm(KeyForm):
    read_write = forms.BooleanField(
        required=False,
        label="Allow pushes",
        help_text="Unchecked: the key may only clone and fetch (read-only).",
    )
