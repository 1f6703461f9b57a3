"""The new-repository page: an empty repository (repos.services), or one imported from a URL
(sources.import_requests). It lives here, above repos, because only this app knows imports."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.debug import sensitive_post_parameters

from repos import services
from repos.errors import ServiceError
from repos.views import form_error
from sources import import_requests
from sources.forms import RepositoryForm


@sensitive_post_parameters("import_password")
@login_required
def repository_new(request):
    form = RepositoryForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            if data["import_url"].strip():
                imp = import_requests.import_request(
                    requester=request.user,
                    name=data["name"],
                    description=data["description"],
                    visibility=data["visibility"],
                    source=data["import_url"],
                    username=data["import_username"],
                    password=data["import_password"],
                    refs_mode=data["refs"],
                    mirror=data["mirror"],
                )
                messages.success(request, f"Importing {imp.full_name} from {imp.source_url}.")
                return redirect("repository", owner=request.user.username, name=imp.repository.name)
            repo = services.repository_create(
                owner=request.user,
                name=data["name"],
                description=data["description"],
                visibility=data["visibility"],
                default_branch=data["default_branch"] or None,
            )
        except ServiceError as exc:
            form_error(form, exc)
        else:
            messages.success(request, f"Created {repo.full_name}.")
            return redirect("repository", owner=repo.owner.username, name=repo.name)
    return render(request, "sources/new.html", {"form": form}, status=400 if form.errors else 200)


# "new" is a reserved name (repos.names); sources/urls.py splices this in.
urlpatterns: list = [
    path("new", repository_new, name="repository-new"),
]
