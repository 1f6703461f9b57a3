"""Git smart HTTP endpoints: who is asking, may they, then hand over to repos.smarthttp.

Answers, per DESIGN.md: an anonymous request for a repository that is not public gets 401
with a Basic challenge whether or not it exists (git then asks for credentials, and existence
does not leak); a signed-in user who may not read it gets 404. Pushing always needs
credentials: a token with the write scope. Which refs the pusher may update is the
pre-receive hook's decision, so its refusal reaches the user as a `remote:` line.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from repos import selectors, smarthttp, sources
from repos.auth import parse_authorization
from repos.extensions import GitClient
from repos.redirects import RepositoryMoved, redirect_response
from repos.tokens import authenticate_token

REALM = 'Basic realm="hostsite"'


def text_response(status: int, message: str) -> HttpResponse:
    response = HttpResponse(
        message.rstrip("\n") + "\n", status=status, content_type="text/plain; charset=utf-8"
    )
    if status == 401:
        response["WWW-Authenticate"] = REALM
    return response


def git_credentials(request):
    """(user, token) from Basic <username>:<token>; (None, None) if none were sent.

    Raises GitHTTPError(401) for credentials that do not authenticate: account passwords
    never work here, only tokens.
    """
    try:
        parsed = parse_authorization(request.META.get("HTTP_AUTHORIZATION", ""))
    except ValueError:
        raise smarthttp.GitHTTPError(401, "Malformed credentials") from None
    if parsed is None:
        return None, None
    username, secret = parsed
    token = authenticate_token(secret, username=username)
    if token is None:
        raise smarthttp.GitHTTPError(
            401, "Invalid credentials: use your username and a personal access token as the password"
        )
    return token.user, token


def authorize(request, owner: str, name: str, service: str = "upload-pack"):
    """The repository and pusher for this request, or GitHTTPError with the status to send.

    The one access rule for everything git clients fetch, bundle lists and objects included."""
    if service not in smarthttp.SERVICES.values():
        raise smarthttp.GitHTTPError(403, "Only the smart HTTP protocol is supported")
    user, token = git_credentials(request)
    repo = selectors.repository_by_name(owner, name)
    if repo is None:
        # A renamed or transferred repository: redirect whoever may read it (git follows the
        # redirect of info/refs and uses the new URL for the rest of the operation).
        moved = selectors.redirected_repository(owner, name)
        if moved is not None and selectors.can_read(user, moved):
            raise RepositoryMoved(moved, owner, name)
    if user is None:
        if repo is None or not repo.is_public or repo.is_deleted or service == "receive-pack":
            raise smarthttp.GitHTTPError(401, "Authentication required")
        return repo, smarthttp.Pusher(None, None)
    if repo is None or not selectors.can_read(user, repo):
        raise smarthttp.GitHTTPError(404, "Repository not found")
    if repo.is_deleted and service == "receive-pack":
        # Staff may still fetch a deleted repository; nobody writes to it until it is restored.
        raise smarthttp.GitHTTPError(403, "This repository is deleted; restore it before pushing")
    if service == "receive-pack" and not token.allows_write:
        raise smarthttp.GitHTTPError(
            403, "This token has the read scope; pushing needs a token with the write scope"
        )
    if service == "receive-pack" and sources.active_import(repo) is not None:
        # The import's atomic fetch would fail on a ref a push created meanwhile, and a failed
        # or cancelled import removes the repository with whatever was pushed.
        raise smarthttp.GitHTTPError(
            403, "This repository is being imported; push when the import has finished"
        )
    return repo, smarthttp.Pusher(user, selectors.role_for(user, repo))


def git_client(request, protocol: str | None) -> GitClient:
    """The request's client, as per-request git configuration (repos.extensions) sees it."""
    return GitClient(
        accept_encoding=request.META.get("HTTP_ACCEPT_ENCODING", ""),
        remote_addr=request.META.get("REMOTE_ADDR", ""),
        base_url=request.build_absolute_uri("/"),
        protocol=protocol,
    )


@require_GET
def info_refs(request, owner: str, name: str):
    service_param = request.GET.get("service", "")
    service = smarthttp.SERVICES.get(service_param)
    if service is None:
        return text_response(403, "Dumb HTTP is not served; use git 1.6.6 or newer")
    try:
        protocol = smarthttp.parse_git_protocol(request.META.get("HTTP_GIT_PROTOCOL"))
        repo, pusher = authorize(request, owner, name, service)
        return smarthttp.advertise(repo, service, pusher, protocol, client=git_client(request, protocol))
    except RepositoryMoved as moved:
        return redirect_response(request, owner, name, moved.repo)
    except smarthttp.GitHTTPError as exc:
        return text_response(exc.status, exc.message)


@csrf_exempt  # authenticated by token only, never by cookie: no cross-site request can push
@require_POST
def service_rpc(request, owner: str, name: str, service: str):
    service = smarthttp.SERVICES[service]
    expected = f"application/x-git-{service}-request"
    if request.content_type != expected:
        return text_response(415, f"Content-Type must be {expected}")
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip"):
        return text_response(415, f"Unsupported Content-Encoding {encoding!r}")
    try:
        protocol = smarthttp.parse_git_protocol(request.META.get("HTTP_GIT_PROTOCOL"))
        repo, pusher = authorize(request, owner, name, service)
        # wsgi.input, not request.body: the body is streamed, and gunicorn decodes chunked
        # transfer encoding there (Django's own stream would see an empty body).
        return smarthttp.rpc(
            repo,
            service,
            pusher,
            body=request.META["wsgi.input"],
            gzip=encoding in ("gzip", "x-gzip"),
            protocol=protocol,
            client=git_client(request, protocol),
        )
    except RepositoryMoved as moved:
        return redirect_response(request, owner, name, moved.repo)
    except smarthttp.GitHTTPError as exc:
        return text_response(exc.status, exc.message)


def dumb_http(request, owner: str, name: str, rest: str):
    return text_response(404, "Not found: dumb HTTP is not served")
