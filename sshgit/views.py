"""Pages: your SSH keys (/settings/keys), a repository's deploy keys, and the SSH help page.

Thin: sshgit.services adds and removes (and refuses, with the reason shown next to the field);
these pages only choose what to show. Deleting asks for a confirmation, which the server
enforces (a POST without `confirm=yes` shows the question instead of deleting).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from repos.errors import NotFound, ServiceError
from repos.views import form_error, repo_or_404
from sshgit import selectors, services
from sshgit.forms import DeployKeyForm, KeyForm
from sshgit.keyparse import MAX_TEXT, KeyParseError, ParsedKey, parse_key


@login_required
def keys(request):
    form = KeyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            key = services.add_user_key(
                request.user, title=form.cleaned_data["title"], text=form.cleaned_data["key"]
            )
        except ServiceError as exc:
            form_error(form, exc)
        else:
            messages.success(request, f"SSH key '{key.title}' added ({key.fingerprint}).")
            return redirect("ssh-keys")
    return render(
        request,
        "sshgit/keys.html",
        {"form": form, "keys": selectors.keys_of(request.user), **_ssh_context(request)},
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def key_delete(request, key_id: int):
    key = selectors.keys_of(request.user).filter(pk=key_id).first()
    if key is None:
        raise Http404
    if request.POST.get("confirm") != "yes":
        return render(request, "sshgit/key_delete.html", {"key": key, "repo": None})
    try:
        services.remove_user_key(request.user, key.pk)
    except NotFound:
        raise Http404 from None
    messages.success(request, f"SSH key '{key.title}' deleted.")
    return redirect("ssh-keys")


def _manageable_repo(request, owner: str, name: str):
    """The repository if the user may manage its deploy keys; 404 for everyone else, as the
    other admin pages answer (a reader must not learn more than an outsider)."""
    repo = repo_or_404(request, owner, name)
    if not services.can_manage_deploy_keys(request.user, repo):
        raise Http404
    return repo


@login_required
def deploy_keys(request, owner: str, name: str):
    repo = _manageable_repo(request, owner, name)
    form = DeployKeyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            key = services.add_deploy_key(
                repo,
                acting_user=request.user,
                title=form.cleaned_data["title"],
                text=form.cleaned_data["key"],
                read_write=form.cleaned_data["read_write"],
            )
        except ServiceError as exc:
            form_error(form, exc)
        else:
            messages.success(request, f"Deploy key '{key.title}' added ({key.fingerprint}).")
            return redirect("repository-deploy-keys", repo.owner.username, repo.name)
    return render(
        request,
        "sshgit/deploy_keys.html",
        {
            "repo": repo,
            "form": form,
            "keys": selectors.deploy_keys_of(repo),
            "clone_ssh": selectors.ssh_clone_url(request, repo),
            **_ssh_context(request),
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def deploy_key_delete(request, owner: str, name: str, key_id: int):
    repo = _manageable_repo(request, owner, name)
    key = selectors.deploy_keys_of(repo).filter(pk=key_id).first()
    if key is None:
        raise Http404
    if request.POST.get("confirm") != "yes":
        return render(request, "sshgit/key_delete.html", {"key": key, "repo": repo})
    try:
        services.remove_deploy_key(repo, acting_user=request.user, key_id=key.pk)
    except NotFound:
        raise Http404 from None
    messages.success(request, f"Deploy key '{key.title}' deleted.")
    return redirect("repository-deploy-keys", repo.owner.username, repo.name)


def host_keys() -> list[ParsedKey]:
    """The server's host keys, from the files sshd reads (sshgit's runtime writes them under
    VAR_DIR/ssh); unreadable or malformed ones are left out rather than shown wrong."""
    found = []
    for path in sorted((settings.VAR_DIR / "ssh").glob("ssh_host_*_key.pub")):
        try:
            text = path.read_text(encoding="ascii")[:MAX_TEXT]
            found.append(parse_key(text, min_rsa_bits=1024))
        except (OSError, UnicodeDecodeError, KeyParseError):
            continue
    return found


def _ssh_context(request) -> dict:
    enabled = selectors.ssh_enabled()
    return {
        "ssh_enabled": enabled,
        "ssh_example_url": selectors.ssh_url_for(request, "OWNER/NAME.git") if enabled else "",
        "ssh_test": " ".join(selectors.ssh_test_command(request)) if enabled else "",
    }


def help_ssh(request):
    enabled = selectors.ssh_enabled()
    keys = host_keys() if enabled else []
    host = selectors.ssh_host(request) if enabled else ""
    port = settings.SSH_PUBLIC_PORT
    bare = host.strip("[]")
    known_host = bare if port == 22 else f"[{bare}]:{port}"
    return render(
        request,
        "sshgit/help.html",
        {
            "host_keys": keys,
            "known_host": known_host,
            "ssh_user": settings.SSH_USER,
            **_ssh_context(request),
        },
    )
