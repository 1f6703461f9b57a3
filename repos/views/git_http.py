"""Git smart HTTP endpoints: the HTTP glue around repos.gitaccess.authorize (who is asking,
may they) and repos.pipeline (git itself)."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from repos import gitprotocol
from repos.gitaccess import GitClient
from repos.gitaccess.authorize import authorize
from repos.pipeline.call import GitCall
from repos.pipeline.serve import advertise, rpc
from repos.redirects import RepositoryMoved, redirect_response

REALM = 'Basic realm="hostsite"'


def text_response(status: int, message: str) -> HttpResponse:
    response = HttpResponse(
        message.rstrip("\n") + "\n", status=status, content_type="text/plain; charset=utf-8"
    )
    if status == 401:
        response["WWW-Authenticate"] = REALM
    return response


def error_response(exc: gitprotocol.GitHTTPError) -> HttpResponse:
    response = text_response(exc.status, exc.message)
    if exc.retry_after is not None:
        response["Retry-After"] = str(exc.retry_after)
    return response


def git_client(request, protocol: str | None) -> GitClient:
    """The request's client, as git access backends (repos.gitaccess) see it."""
    return GitClient(
        accept_encoding=request.META.get("HTTP_ACCEPT_ENCODING", ""),
        remote_addr=request.META.get("REMOTE_ADDR", ""),
        base_url=request.build_absolute_uri("/"),
        protocol=protocol,
    )


@require_GET
def info_refs(request, owner: str, name: str):
    service_param = request.GET.get("service", "")
    service = gitprotocol.SERVICES.get(service_param)
    if service is None:
        return text_response(403, "Dumb HTTP is not served; use git 1.6.6 or newer")
    try:
        protocol = gitprotocol.parse_git_protocol(request.META.get("HTTP_GIT_PROTOCOL"))
        repo, pusher = authorize(request, owner, name, service)
        call = GitCall(repo, service, pusher, protocol, client=git_client(request, protocol))
        return advertise(call)
    except RepositoryMoved as moved:
        return redirect_response(request, owner, name, moved.repo)
    except gitprotocol.GitHTTPError as exc:
        return error_response(exc)


@csrf_exempt  # authenticated by token only, never by cookie: no cross-site request can push
@require_POST
def service_rpc(request, owner: str, name: str, service: str):
    service = gitprotocol.SERVICES[service]
    expected = f"application/x-git-{service}-request"
    if request.content_type != expected:
        return text_response(415, f"Content-Type must be {expected}")
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip"):
        return text_response(415, f"Unsupported Content-Encoding {encoding!r}")
    try:
        protocol = gitprotocol.parse_git_protocol(request.META.get("HTTP_GIT_PROTOCOL"))
        repo, pusher = authorize(request, owner, name, service)
        # wsgi.input, not request.body: the body is streamed, and gunicorn decodes chunked
        # transfer encoding there (Django's own stream would see an empty body).
        call = GitCall(repo, service, pusher, protocol, client=git_client(request, protocol))
        return rpc(call, body=request.META["wsgi.input"], gzip=encoding in ("gzip", "x-gzip"))
    except RepositoryMoved as moved:
        return redirect_response(request, owner, name, moved.repo)
    except gitprotocol.GitHTTPError as exc:
        return error_response(exc)


def dumb_http(request, owner: str, name: str, rest: str):
    return text_response(404, "Not found: dumb HTTP is not served")
