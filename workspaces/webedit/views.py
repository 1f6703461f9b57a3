"""The web editor's pages: edit a file, add one, upload files, delete one; then "Open proposal".

Each page starts as the browsing pages do (repo_or_404: a private repository is 404 to
outsiders), sends anonymous users of a public one to sign in, and resolves `<ref>/<path>` to
a branch or a workspace ref the viewer may see (places.locate; else 404, as an unknown ref).
Whether the viewer may write there is the service's to decide, with the rules a push meets:
its refusal is shown with 403, a stale edit gets the conflict page (409) with what was typed
kept, invalid input the form again with the error (400). GET shows a form, POST commits;
CSRF is Django's (upload checks it itself, after refusing an oversized body unread).
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from gitcore.gittools import is_ancestor
from repos import browse
from repos.errors import Conflict, Forbidden, ServiceError
from repos.views import form_error, repo_or_404
from repos.views.browse import display, url_for
from workspaces.webedit import forms, outcome, places, service
from workspaces.webedit.places import Place
from workspaces.webedit.types import EditRequest, FileChange, Kind

PAGES = {"edit": "edit", "add": "new", "upload": "upload", "delete": "delete"}  # URL names' kinds
FORMS = {"edit": forms.EditForm, "add": forms.AddForm, "upload": forms.UploadForm, "delete": forms.DeleteForm}


def _editor_page(view):
    @functools.wraps(view)
    def wrapper(request, owner: str, name: str, spec: str):
        repo = repo_or_404(request, owner, name)
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        place = places.locate(repo, request.user, spec)
        if place is None:
            raise Http404("no such ref")
        return view(request, repo, place)

    return wrapper


def _entry(repo, place: Place, kind: str):
    """The file (edit, delete) or directory (add, upload) the page is about, or 404."""
    entry = browse.entry_at(repo.disk_path, place.commit, place.path)
    wanted = "tree" if kind in ("add", "upload") else "blob"
    if entry is None or entry.kind != wanted:
        raise Http404("no such file" if wanted == "blob" else "no such directory")
    return entry


def _form(request, repo, place: Place, kind: Kind, initial: dict):
    choices = places.targets(repo, request.user, place)
    initial = {
        "base_commit": place.commit,
        "target": places.default_target(choices),
        "name": service.suggest_name(repo, request.user, kind, place.path),
        **initial,
    }
    data = (request.POST, request.FILES) if request.method == "POST" else ()
    return FORMS[kind](*data, initial=initial, targets=choices)


def _page(request, repo, place: Place, kind: str, form, *, status: int = 200, **extra):
    if place.branch:
        back = url_for(repo, "tree" if kind in ("add", "upload") else "blob", place.branch, place.path)
    else:  # a workspace ref is not browsable by name: back to its page
        username, refname = place.base_ref.removeprefix(places.WORKSPACES).split("/", 1)
        back = reverse(
            "workspace-ref",
            kwargs={
                "owner": repo.owner.username,
                "name": repo.name,
                "username": username,
                "refname": refname,
            },
        )
    context = {
        "repo": repo,
        "place": place,
        "path": display(place.path),
        "kind": kind,
        "form": form,
        "back_url": back,
        "tab": "code",
        "edit_max": settings.WEB_EDIT_MAX_BYTES,
        "max_files": forms.UPLOAD_MAX_FILES,
        **extra,
    }
    template = "edit" if kind == "add" else kind
    return render(request, f"workspaces/webedit/{template}.html", context, status=status)


def _commit(
    request, repo, place: Place, kind: Kind, form, changes: list[FileChange], *, typed: str | None = None
):
    """Hand the commit to the service and answer with its outcome."""
    data = form.cleaned_data
    target, name = data["target"], data.get("name", "").strip()
    if target == "ref":
        mine = f"{places.WORKSPACES}{request.user.username}/"
        target, name = "workspace", place.base_ref.removeprefix(mine)
    edit = EditRequest(
        repository=repo,
        user=request.user,
        base_ref=place.base_ref,
        base_commit=data["base_commit"],
        changes=tuple(changes),
        message=data["message"],
        target="branch" if target == "branch" else "workspace",
        name=name,
        host=request.get_host(),
    )
    try:
        result = service.commit_changes(edit)
    except Forbidden as exc:
        return render(
            request, "workspaces/webedit/refused.html", {"repo": repo, "reason": exc.message}, status=403
        )
    except Conflict as exc:
        if "name" in exc.fields:  # the workspace ref's name is taken: choose another
            form_error(form, exc)
            return _page(request, repo, place, kind, form, status=409)
        # One file: show what changed in it. Several (an upload): the reason names the file.
        change = changes[0] if len(changes) == 1 else None
        target_ref = outcome.full_target_ref(place, edit.target, name, request.user.username)
        context = {
            "repo": repo,
            "place": place,
            "kind": kind,
            "reason": exc.message,
            "path": display(change.path if change else place.path),
            "typed": typed,
            "change": change
            and outcome.what_changed(
                repo, place, target_ref, change.path, edit.base_commit, change.expected_blob
            ),
            "reload_url": places.page_url(repo, PAGES[kind], place.base_ref, place.path)
            + (f"?proposal={number}" if (number := _proposal_number(request)) else ""),
            "tab": "code",
        }
        return render(request, "workspaces/webedit/conflict.html", context, status=409)
    except ServiceError as exc:
        form_error(form, exc)
        return _page(request, repo, place, kind, form, status=400)
    if edit.target == "branch" and place.branch:
        messages.success(request, f"Committed {result.commit[:12]} to {place.branch}.")
        if kind in ("edit", "add"):
            return redirect(url_for(repo, "blob", place.branch, changes[0].path))
        return redirect(
            url_for(repo, "tree", place.branch, place.directory if kind == "delete" else place.path)
        )
    # Back to the proposal whose ref got the commit; a new ref gets "Open proposal" instead.
    number = _proposal_number(request) if result.ref == place.base_ref else None
    outcome.remember(request, repo, result, edit.message, proposal=number)
    return redirect("webedit-done", owner=repo.owner.username, name=repo.name)


def _proposal_number(request) -> int | None:
    """`?proposal=<n>`: the page was opened from that proposal (its files edited in place)."""
    number = request.GET.get("proposal", "")
    return int(number) if number.isdigit() and len(number) <= 9 else None


def _joined(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


@_editor_page
def edit(request, repo, place: Place):
    editable = service.editable(repo, place.commit, place.path)
    posted = request.method == "POST"
    # A form that arrives after the file changed or went away goes to the service all the
    # same: it answers with the conflict page, which keeps what was typed.
    if editable.blob is None and not posted:
        raise Http404("no such file")
    name = display(place.path.rpartition("/")[2])
    initial = {"content": editable.text or "", "message": f"Update {name}", "expected_blob": editable.blob}
    form = _form(request, repo, place, "edit", initial)
    if not posted:
        if editable.reasons:
            upload_url = places.page_url(repo, "upload", place.base_ref, place.directory)
            return _page(request, repo, place, "edit", None, editable=editable, upload_url=upload_url)
        return _page(request, repo, place, "edit", form, editable=editable)
    if not form.is_valid():
        return _page(request, repo, place, "edit", form, status=400)
    text = form.cleaned_data["content"]
    change = FileChange("edit", place.path, text.encode("utf-8"), form.cleaned_data["expected_blob"])
    return _commit(request, repo, place, "edit", form, [change], typed=text)


@_editor_page
def add(request, repo, place: Place):
    if request.method != "POST":  # a directory gone meanwhile: the service says so, text kept
        _entry(repo, place, "add")
    form = _form(request, repo, place, "add", {"message": "Add a file"})
    if request.method == "POST":
        if not form.is_valid():
            return _page(request, repo, place, "add", form, status=400)
        text, filename = form.cleaned_data["content"], form.cleaned_data["filename"]
        change = FileChange("add", _joined(place.path, filename), text.encode("utf-8"))
        return _commit(request, repo, place, "add", form, [change], typed=text)
    return _page(request, repo, place, "add", form)


@_editor_page
def delete(request, repo, place: Place):
    if request.method == "POST":  # gone or changed meanwhile: the service's conflict
        form = _form(request, repo, place, "delete", {})
        if not form.is_valid():
            return _page(request, repo, place, "delete", form, status=400)
        change = FileChange("delete", place.path, None, form.cleaned_data["expected_blob"])
        return _commit(request, repo, place, "delete", form, [change])
    entry = _entry(repo, place, "delete")
    initial = {"message": f"Delete {display(entry.name)}", "expected_blob": entry.sha}
    return _page(request, repo, place, "delete", _form(request, repo, place, "delete", initial))


@csrf_exempt
@_editor_page
def upload(request, repo, place: Place):
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    # Refused before Django reads (and spools) the body; nothing was typed but the files.
    if request.method == "POST" and length > forms.upload_total_max() + forms.UPLOAD_FRAMING:
        reason = f"At most {filesizeformat(forms.upload_total_max())} can be uploaded at once."
        return render(
            request, "workspaces/webedit/refused.html", {"repo": repo, "reason": reason}, status=413
        )
    return _upload(request, repo, place)


@csrf_protect
def _upload(request, repo, place: Place):
    _entry(repo, place, "upload")
    where = display(place.path) or repo.name
    form = _form(request, repo, place, "upload", {"message": f"Upload files to {where}"})
    if request.method != "POST":
        return _page(request, repo, place, "upload", form)
    if not form.is_valid():
        return _page(request, repo, place, "upload", form, status=400)
    # The files the page showed are those of the commit it was loaded at: one of the ref's
    # history (an id typed by hand names nothing here), else the page is out of date.
    loaded = form.cleaned_data["base_commit"]
    if not is_ancestor(repo.disk_path, loaded, place.commit):
        form.add_error(None, f"{place.base_ref} changed since the page was loaded: load it again.")
        return _page(request, repo, place, "upload", form, status=409)
    changes, problem = _upload_changes(repo, place, loaded, request.FILES.getlist("files"))
    if problem:
        form.add_error(None, problem)
        return _page(request, repo, place, "upload", form, status=400)
    return _commit(request, repo, place, "upload", form, changes)


def _upload_changes(repo, place: Place, loaded: str, files) -> tuple[list[FileChange], str | None]:
    if not files:
        return [], "Choose at least one file."
    if len(files) > forms.UPLOAD_MAX_FILES:
        return [], f"At most {forms.UPLOAD_MAX_FILES} files at once."
    changes, seen = [], set()
    for upload in files:
        name = forms.upload_name(upload.name or "")
        if upload.size > settings.WEB_EDIT_MAX_BYTES:
            limit = settings.WEB_EDIT_MAX_BYTES // 1024
            return [], f"{name} is larger than the limit of {limit} KiB a file."
        if name in seen:
            return [], f"Two files are named {name}."
        seen.add(name)
        path = _joined(place.path, name)
        # Over an existing file, the upload replaces the blob this page showed, or conflicts.
        existing = None
        if browse.clean_path(path) == path and name not in ("", ".", ".."):
            found = browse.entry_at(repo.disk_path, loaded, path)
            existing = found.sha if found is not None and found.kind == "blob" else None
        changes.append(FileChange("upload", path, upload.read(), existing))
    return changes, None


def done(request, owner: str, name: str):
    """The last web commit into a workspace on this repository: where it is, and "Open proposal"."""
    repo = repo_or_404(request, owner, name)
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    found = outcome.recalled(request, repo)
    if found is None:
        return redirect("repository", owner=repo.owner.username, name=repo.name)
    return render(request, "workspaces/webedit/done.html", {"repo": repo, "done": found, "tab": "code"})
