from django import forms
from django.contrib.auth import password_validation

from repos.hooks import refspace
from repos.models import TokenScope, User, Visibility


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
