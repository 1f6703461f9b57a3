from django import forms
from django.contrib.auth import password_validation

from repos.hooks import refspace
from repos.models import RefsMode, TokenScope, User, Visibility


class SignupForm(forms.Form):
    username = forms.CharField(
        max_length=39,
        help_text=f"Lowercase letters, digits and hyphens. Also your workspace: {refspace.WORKSPACES}<username>/.",
    )
    email = forms.EmailField(required=False)
    password1 = forms.CharField(label="Password", widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label="Password again", widget=forms.PasswordInput, strip=False)

    def clean_username(self):
        return self.cleaned_data["username"].strip().lower()

    def clean(self):
        data = super().clean()
        if data.get("password1") and data.get("password1") != data.get("password2"):
            self.add_error("password2", "The two passwords differ.")
        elif data.get("password1"):
            user = User(username=data.get("username", ""), email=data.get("email", ""))
            try:
                password_validation.validate_password(data["password1"], user)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


class ProfileForm(forms.ModelForm):
    class Meta:
        model = User
        fields = ["display_name", "email", "bio", "commit_name", "commit_email"]
        widgets = {"bio": forms.Textarea(attrs={"rows": 4})}


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="What the token is for.")
    scope = forms.ChoiceField(
        choices=TokenScope.choices,
        initial=TokenScope.READ,
        widget=forms.RadioSelect,
        help_text="read: clone and fetch, read the API. write: also push and change things. "
        "status: only post commit statuses (for a CI; no git, no other API call).",
    )


class RepositoryForm(forms.Form):
    name = forms.CharField(max_length=300, strip=False)
    description = forms.CharField(max_length=350, required=False)
    visibility = forms.ChoiceField(
        choices=Visibility.choices, initial=Visibility.PUBLIC, widget=forms.RadioSelect
    )
    default_branch = forms.CharField(
        max_length=255, initial="main", required=False, help_text="When importing, the source's HEAD decides."
    )
    # Import an existing repository instead of starting empty (repos.import_requests checks the URL).
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


class RepositorySettingsForm(forms.Form):
    description = forms.CharField(max_length=350, required=False)
    visibility = forms.ChoiceField(choices=Visibility.choices, widget=forms.RadioSelect)
    default_branch = forms.CharField(max_length=255)


class MemberForm(forms.Form):
    username = forms.CharField(max_length=39)
    role = forms.ChoiceField(choices=[("reader", "reader"), ("maintainer", "maintainer"), ("admin", "admin")])


class WebhookForm(forms.Form):
    url = forms.URLField(max_length=2000, label="Payload URL", assume_scheme="https")
    secret = forms.CharField(max_length=200, required=False, help_text="Leave empty to generate one.")
    include_workspaces = forms.BooleanField(required=False, initial=True, label="Also send workspace pushes")
