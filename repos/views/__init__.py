from django.http import Http404

from repos import selectors
from repos.errors import ServiceError
from repos.redirects import RepositoryMoved


def repo_or_404(request, owner: str, name: str):
    """The repository if the user may read it. "Private" and "missing" get the same 404, so
    existence does not leak. Every app's pages use this one check."""
    repo = selectors.readable_repository(request.user, owner, name)
    if repo is None:
        moved_to_readable(request.user, owner, name)
        raise Http404
    return repo


def moved_to_readable(user, owner: str, name: str) -> None:
    """Raise RepositoryMoved if owner/name is an old name of a repository the user may read
    (the middleware redirects); return if not. Shared with the API's look-up."""
    if selectors.repository_by_name(owner, name) is not None:
        return
    target = selectors.redirected_repository(owner, name)
    if target is not None and selectors.can_read(user, target):
        raise RepositoryMoved(target, owner, name)


def admin_repo_or_404(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    if not selectors.can_admin(request.user, repo):
        raise Http404
    return repo


def form_error(form, exc: ServiceError) -> None:
    """Show a service's error next to the field it names (or on the form)."""
    placed = False
    for field in exc.fields:
        if field in form.fields:
            form.add_error(field, exc.message)
            placed = True
    if not placed:
        form.add_error(None, exc.message)
