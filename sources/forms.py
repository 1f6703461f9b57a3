"""The new-repository form: an empty repository, or one imported from a URL."""

from django import forms

from repos.hooks import refspace
from repos.models import RefsMode, Visibility


class RepositoryForm(forms.Form):
    name = forms.CharField(max_length=300, strip=False)
    description = forms.CharField(max_length=350, required=False)
    visibility = forms.ChoiceField(
        choices=Visibility.choices, initial=Visibility.PUBLIC, widget=forms.RadioSelect
    )
    default_branch = forms.CharField(
        max_length=255, initial="main", required=False, help_text="When importing, the source's HEAD decides."
    )
    # Import an existing repository instead of starting empty (sources.import_requests checks the URL).
    import_url = forms.CharField(
        max_length=2000,
        required=False,
        label="Import from URL",
        help_text="An https://, http:// or git:// URL of an existing repository. Its HEAD, branches and "
        "tags are imported; other refs are listed in the report and left out.",
    )
    import_username = forms.CharField(
        max_length=200, required=False, label="Username at the source", help_text="Only for a private source."
    )
    import_password = forms.CharField(
        max_length=1000,
        required=False,
        strip=False,
        label="Password or token",
        widget=forms.PasswordInput(render_value=False),
        help_text="Used once for this import, never stored.",
    )
    refs = forms.ChoiceField(
        choices=RefsMode.choices,
        initial=RefsMode.DEFAULT,
        required=False,
        label="Refs to import",
        widget=forms.RadioSelect,
        help_text="All refs keeps the other namespaces (refs/pull/...) under "
        f"{refspace.IMPORTED}, never advertised. Site staff only.",
    )
    mirror = forms.BooleanField(
        required=False,
        label="Keep it in sync (pull mirror)",
        help_text="The branches and tags then follow the source and cannot be pushed to.",
    )

    BASIC = ("name", "description", "visibility", "default_branch")
    IMPORT = ("import_url", "import_username", "import_password", "refs", "mirror")

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def basic_fields(self):
        return [self[name] for name in self.BASIC]

    def import_fields(self):
        staff = self.user is not None and self.user.is_staff
        return [self[name] for name in self.IMPORT if staff or name != "refs"]

    def clean(self):
        data = super().clean()
        data["refs"] = data.get("refs") or RefsMode.DEFAULT
        if not (data.get("import_url") or "").strip():
            if data.get("import_username") or data.get("import_password") or data.get("mirror"):
                self.add_error("import_url", "Give the URL to import from.")
            if data["refs"] != RefsMode.DEFAULT:
                raise forms.ValidationError("All refs applies to an import only.")
        if data["refs"] == RefsMode.ALL and not (self.user is not None and self.user.is_staff):
            # Not rendered for others; a forged value gets an error, not a silent default.
            raise forms.ValidationError("Only site staff can import all refs.")
        return data
