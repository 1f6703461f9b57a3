"""Who may reach a repository over git, decided before git starts.

Answers, per DESIGN.md: an anonymous request for a repository that is not public gets 401
with a Basic challenge whether or not it exists (git then asks for credentials, and existence
does not leak); a signed-in user who may not read it gets 404. Pushing always needs
credentials: a token with the write scope. Which refs the pusher may update is the
pre-receive hook's decision (the policy of repos.gitaccess), so its refusal reaches the user
as a `remote:` line.

The one access rule for everything git clients fetch: smart HTTP, bundle lists and objects.
"""

from __future__ import annotations

from django.http import HttpRequest

from repos import ratelimits, selectors
from repos.auth import CredentialsRefused, presented_token
from repos.gitprotocol import SERVICES, GitHTTPError, Pusher
from repos.models import Repository, TokenScope
from repos.redirects import RepositoryMoved


def git_credentials(request: HttpRequest):
    """(user, token) from Basic <username>:<token>; (None, None) if none were sent.

    Raises GitHTTPError(401) for credentials that do not authenticate: account passwords
    never work here, only tokens. Each such failure counts against the client's address, and
    past the limit every request with credentials from there gets 429 before they are checked
    (repos.ratelimits); requests that authenticate are never counted.
    """
    try:
        token = presented_token(request)
    except CredentialsRefused as refused:
        if refused.wait is not None:
            # One line: git prints a text/plain body of a failed info/refs as "remote: <line>".
            message = ratelimits.message(ratelimits.AUTH_REASON, refused.wait)
            raise GitHTTPError(429, message, retry_after=refused.wait) from None
        if refused.malformed:
            raise GitHTTPError(401, "Malformed credentials") from None
        raise GitHTTPError(
            401, "Invalid credentials: use your username and a personal access token as the password"
        ) from None
    if token is None:
        return None, None
    if token.scope == TokenScope.STATUS:
        # A CI's status token only posts statuses (repos.api.permissions): refused before the
        # repository is looked up, so the answer is the same whether or not it exists.
        raise GitHTTPError(403, "This token may only post commit statuses; use a read or write token for git")
    return token.user, token


def authorize(
    request: HttpRequest, owner: str, name: str, service: str = "upload-pack"
) -> tuple[Repository, Pusher]:
    """The repository and pusher for this request, or GitHTTPError with the status to send
    (RepositoryMoved for a renamed repository its reader may follow)."""
    if service not in SERVICES.values():
        raise GitHTTPError(403, "Only the smart HTTP protocol is supported")
    user, token = git_credentials(request)
    if user is None:
        repo = selectors.repository_by_name(owner, name)
        if repo is None:
            # Anonymous readers of a public repository that moved follow it too.
            _raise_if_moved(None, owner, name)
        if repo is None or not repo.is_public or repo.is_deleted or service == "receive-pack":
            raise GitHTTPError(401, "Authentication required")
        return repo, Pusher(None, None)
    return authorize_user(
        user,
        owner,
        name,
        service,
        write_refusal=None
        if token.allows_write
        else "This token has the read scope; pushing needs a token with the write scope",
    )


def authorize_user(
    user, owner: str, name: str, service: str, *, write_refusal: str | None = None
) -> tuple[Repository, Pusher]:
    """The same decision for a signed-in user, however they signed in (a token over HTTP, a
    key over SSH). `write_refusal`: why this credential may not push at all (None: it may)."""
    repo = selectors.repository_by_name(owner, name)
    if repo is None:
        # A renamed or transferred repository: redirect whoever may read it (git follows the
        # redirect of info/refs and uses the new URL for the rest of the operation).
        _raise_if_moved(user, owner, name)
    if repo is None or not selectors.can_read(user, repo):
        raise GitHTTPError(404, "Repository not found")
    if repo.is_deleted and service == "receive-pack":
        # Staff may still fetch a deleted repository; nobody writes to it until it is restored.
        raise GitHTTPError(403, "This repository is deleted; restore it before pushing")
    if service == "receive-pack" and write_refusal:
        raise GitHTTPError(403, write_refusal)
    if service == "receive-pack":
        refuse_push_while_importing(repo)
    return repo, Pusher(user, selectors.role_for(user, repo))


def refuse_push_while_importing(repo: Repository) -> None:
    if selectors.active_import(repo) is not None:
        # The import's atomic fetch would fail on a ref a push created meanwhile, and a failed
        # or cancelled import removes the repository with whatever was pushed.
        raise GitHTTPError(403, "This repository is being imported; push when the import has finished")


def _raise_if_moved(user, owner: str, name: str) -> None:
    moved = selectors.redirected_repository(owner, name)
    if moved is not None and selectors.can_read(user, moved):
        raise RepositoryMoved(moved, owner, name)
