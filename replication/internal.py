"""The primary's internal git endpoint: replicas fetch every ref of a repository from here.

`GET /_replication/<id>.git/info/refs?service=git-upload-pack` and
`POST /_replication/<id>.git/git-upload-pack`, as smart HTTP with nothing hidden: workspaces,
take-down and archive refs, everything a replica must hold to serve or to keep. The git
machinery is repos.pipeline's (request bodies checked by repos.requestbody, git streamed by
gitcore.gitstream), with a replica's steps: nothing hidden, screened or counted; only the
access decision differs, and it is all or nothing: a bearer token
signed with the site's SECRET_KEY for a node name, at most TOKEN_MAX_AGE seconds old. Anything
else, and any request on a replica, answers 404 exactly as an unknown path does, so the route
tells an outsider nothing. Repositories are addressed by id (soft-deleted ones too: an
undelete must find them on the replicas), never by name, so renames do not matter.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.http import Http404, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from hostsite.node_settings import NODE_NAME
from repos import pipeline
from repos.gitprotocol import GitHTTPError, Pusher, parse_git_protocol
from repos.models import Repository

TOKEN_SALT = "hostsite.replication.fetch"  # noqa: S105 - a salt, not a secret
TOKEN_MAX_AGE = 300
SERVICE = "upload-pack"


def fetch_token(node_name: str) -> str:
    """The token a node presents to fetch from the primary (its name, signed and dated)."""
    return signing.TimestampSigner(salt=TOKEN_SALT).sign(node_name)


def token_node(header: str) -> str | None:
    """The node an `Authorization: Bearer <token>` header names, if its token is valid now.
    The signature is compared in constant time (Signer.unsign)."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token or len(token) > 200:
        return None
    try:
        node = signing.TimestampSigner(salt=TOKEN_SALT).unsign(token.strip(), max_age=TOKEN_MAX_AGE)
    except signing.BadSignature:  # SignatureExpired is one
        return None
    return node if NODE_NAME.fullmatch(node) else None


def _repository(request, repo_id: int) -> Repository:
    """The repository, or Http404 for whatever may not see it: the same 404 as any missing
    page, whether the token, the role or the repository is what is wrong."""
    if settings.HOSTSITE_ROLE != "primary":
        raise Http404
    if token_node(request.META.get("HTTP_AUTHORIZATION", "")) is None:
        raise Http404
    repo = Repository.objects.filter(pk=repo_id).first()
    if repo is None:
        raise Http404
    return repo


def _error(exc: GitHTTPError) -> HttpResponse:
    return HttpResponse(exc.message + "\n", status=exc.status, content_type="text/plain; charset=utf-8")


def info_refs(request, repo_id: int):
    repo = _repository(request, repo_id)
    if request.method != "GET" or request.GET.get("service") != f"git-{SERVICE}":
        raise Http404
    try:
        return pipeline.advertise(_call(request, repo))
    except GitHTTPError as exc:
        return _error(exc)


@csrf_exempt  # a bearer token, never a cookie
def upload_pack(request, repo_id: int):
    repo = _repository(request, repo_id)
    if request.method != "POST":
        raise Http404
    if request.content_type != f"application/x-git-{SERVICE}-request":
        return HttpResponse(status=415)
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip"):
        return HttpResponse(status=415)
    try:
        # wsgi.input, not request.body: streamed, and gunicorn decodes chunked bodies there.
        body = request.META["wsgi.input"]
        return pipeline.rpc(_call(request, repo), body=body, gzip=encoding in ("gzip", "x-gzip"))
    except GitHTTPError as exc:
        return _error(exc)


def _call(request, repo: Repository) -> pipeline.GitCall:
    protocol = parse_git_protocol(request.META.get("HTTP_GIT_PROTOCOL"))
    return pipeline.GitCall(repo, SERVICE, Pusher(None, None), protocol, transport=pipeline.REPLICA)
