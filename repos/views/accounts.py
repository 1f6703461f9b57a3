"""Sign up, profile, personal access tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from repos import ratelimits, selectors, services
from repos.errors import ServiceError
from repos.forms import ProfileForm, SignupForm, TokenForm
from repos.models import AccessToken
from repos.views import form_error

NEW_TOKEN_SESSION_KEY = "new_token_secret"  # noqa: S105 - a session key name


class SignInView(LoginView):
    """Django's sign-in, refused with 429 for an account or address past its limit of failed
    attempts, before the password is checked (repos.ratelimits)."""

    template_name = "accounts/login.html"

    def post(self, request, *args, **kwargs):
        wait = ratelimits.signin_attempt(request, request.POST.get("username", ""))
        if wait is None:
            return super().post(request, *args, **kwargs)
        context = self.get_context_data(
            form=self.form_class(request), refusal=ratelimits.message(ratelimits.SIGNIN_REASON, wait)
        )
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(wait)
        return response

    def form_valid(self, form):
        ratelimits.signin_succeeded(self.request, self.request.POST.get("username", ""))
        return super().form_valid(form)


def signup(request):
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = services.user_create(
                username=form.cleaned_data["username"],
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password1"],
            )
        except ServiceError as exc:
            form_error(form, exc)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome, {user.username}.")
            return redirect("home")
    return render(request, "accounts/signup.html", {"form": form}, status=400 if form.errors else 200)


def profile(request, username: str):
    user = selectors.user_by_name(username)
    if user is None:
        raise Http404
    repos = selectors.visible_repositories(request.user).filter(owner=user).order_by("name")
    return render(request, "accounts/profile.html", {"profile_user": user, "repos": repos})


@login_required
def profile_settings(request):
    form = ProfileForm(request.POST or None, instance=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Profile saved.")
        return redirect("profile-settings")
    return render(request, "accounts/settings_profile.html", {"form": form})


@login_required
def tokens(request):
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            _token, secret = services.token_create(
                user=request.user, name=form.cleaned_data["name"], scope=form.cleaned_data["scope"]
            )
        except ServiceError as exc:
            form_error(form, exc)
        else:
            # Post/redirect/get, and the secret is popped on the next page: shown exactly once.
            request.session[NEW_TOKEN_SESSION_KEY] = secret
            return redirect("tokens")
    new_secret = request.session.pop(NEW_TOKEN_SESSION_KEY, None)
    return render(
        request,
        "accounts/tokens.html",
        {
            "form": form,
            "tokens": AccessToken.objects.filter(user=request.user),
            "new_secret": new_secret,
        },
    )


@login_required
@require_POST
def token_revoke(request, token_id: int):
    token = get_object_or_404(AccessToken, pk=token_id, user=request.user)
    services.token_revoke(token=token)
    messages.success(request, f"Token '{token.name}' revoked.")
    return redirect("tokens")
