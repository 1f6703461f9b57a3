"""Old URLs of renamed or transferred repositories (RepositoryRedirect).

The page and API helpers (repos.views.repo_or_404, repos.api.access.repo_or_404) raise
RepositoryMoved when a name misses but a redirect leads to a repository the user may read; this
middleware answers it with a redirect to the same path under the new name. Git's endpoints
redirect in repos.views.git_http themselves (git follows a redirect of its first request,
`info/refs`, and uses the new URL from then on).
"""

from __future__ import annotations

import re

from django.http import HttpResponsePermanentRedirect, HttpResponseRedirect


class RepositoryMoved(Exception):
    def __init__(self, repo, owner: str, name: str):
        super().__init__(f"{owner}/{name} is now {repo.full_name}")
        self.repo = repo
        self.owner = owner
        self.name = name


def moved_path(path: str, owner: str, name: str, repo) -> str | None:
    """`path` with its `/<owner>/<name>` segment pair (as typed: any case, `.git` suffix kept)
    replaced by the repository's current name; None if the path has no such segment pair."""
    # Anchored: pages are /<owner>/<name>/..., API endpoints /api/v1/repos/<owner>/<name>/...
    # (a user named "v1" with a repository "repos" must not match inside the API prefix).
    pattern = re.compile(
        rf"^(/api/v1/repos)?/{re.escape(owner)}/{re.escape(name)}(?=\.git(?:/|$)|/|$)", re.IGNORECASE
    )
    new, count = pattern.subn(lambda m: f"{m[1] or ''}/{repo.owner.username}/{repo.name}", path, count=1)
    return new if count else None


def redirect_response(request, owner: str, name: str, repo):
    path = moved_path(request.path, owner, name, repo)
    if path is None:
        # A spelling the pattern does not know (percent-encoded, say): the repository's page.
        path = f"/{repo.owner.username}/{repo.name}"
    query = request.META.get("QUERY_STRING", "")
    url = f"{path}?{query}" if query else path
    if request.method in ("GET", "HEAD"):
        return HttpResponsePermanentRedirect(url)
    # 308 keeps the method and body (a 301 lets clients turn a POST into a GET).
    response = HttpResponseRedirect(url)
    response.status_code = 308
    return response


class RepositoryMovedMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, RepositoryMoved):
            return redirect_response(request, exception.owner, exception.name, exception.repo)
        return None
