"""The bundle list git reads (`--bundle-uri`) and, for the file backend, the objects.

Access is decided as for git over HTTP (repos.gitaccess.authorize): anonymous requests for a
repository that is not public get 401 with a Basic challenge, so existence does not leak and
git asks for credentials; a signed-in user without read access gets 404.
"""

from __future__ import annotations

import re

from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from bundles import selectors
from bundles.listing import listed_entries, render_list
from bundles.storage import CHUNK, CONTENT_TYPE, IMMUTABLE, FileStorage, get_storage, valid_key
from repos import selectors as repo_selectors
from repos import transfers
from repos.gitaccess.authorize import authorize, git_credentials
from repos.gitprotocol import GitHTTPError
from repos.views.git_http import error_response, text_response


@require_GET
def bundle_list(request, owner: str, name: str):
    try:
        repo, _pusher = authorize(request, owner, name)
    except GitHTTPError as exc:
        return error_response(exc)
    listing = listed_entries(
        repo,
        accept_encoding=request.META.get("HTTP_ACCEPT_ENCODING", ""),
        remote_addr=request.META.get("REMOTE_ADDR", ""),
        base_url=request.build_absolute_uri("/"),
    )
    # What clients were sent to fetch from bundles: the offload figure's measure for storage
    # the app never sees (S3, a CDN). Objects the app serves itself are counted exactly too.
    transfers.add(repo.pk, bundle_list_requests=1, bundle_bytes_listed=listing.size)
    body = render_list(listing)
    response = HttpResponse(body, content_type="text/plain; charset=utf-8")
    response["Vary"] = "Accept-Encoding, Authorization"
    # Lists change with every build; the objects they name never do.
    response["Cache-Control"] = "no-cache" if repo.is_public else "private, no-cache"
    return response


def _may_read_object(request, rows) -> tuple[bool, bool]:
    """(allowed, public). An object may belong to several repositories (content-addressed):
    public if any of them is, otherwise readable with read access to any of them."""
    repos = {row.repository_id: row.repository for row in rows}.values()
    if any(repo.is_public for repo in repos):
        return True, True
    user, _token = git_credentials(request)
    if user is None:
        raise GitHTTPError(401, "Authentication required")
    return any(repo_selectors.can_read(user, repo) for repo in repos), False


_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a single satisfiable range; None to send the whole object.

    Raises ValueError for a range that cannot be satisfied (416). Several ranges are answered
    with the whole object, which RFC 9110 allows.
    """
    match = _RANGE.fullmatch(header.strip())
    if match is None or (not match[1] and not match[2]):
        return None
    if match[1]:
        first = int(match[1])
        last = min(int(match[2]), size - 1) if match[2] else size - 1
        if match[2] and int(match[2]) < first:
            return None
        if first >= size:
            raise ValueError("range starts past the end")
        return first, last
    suffix = int(match[2])
    if suffix == 0 or size == 0:
        raise ValueError("empty suffix range")
    return max(0, size - suffix), size - 1


def _stream(fh, first: int, length: int, repo_id: int):
    sent = 0
    try:
        fh.seek(first)
        while length > 0:
            chunk = fh.read(min(CHUNK, length))
            if not chunk:
                return
            length -= len(chunk)
            sent += len(chunk)
            yield chunk
    finally:
        fh.close()
        transfers.add(repo_id, bundle_bytes_served=sent)


@require_GET  # HEAD too: Django's require_GET allows it
def bundle_object(request, key: str):
    storage = get_storage()
    if not valid_key(key) or not isinstance(storage, FileStorage):
        return text_response(404, "Not found")
    rows = list(selectors.rows_for_key(key))
    if not rows:
        return text_response(404, "Not found")
    try:
        allowed, public = _may_read_object(request, rows)
    except GitHTTPError as exc:
        return error_response(exc)
    if not allowed:
        return text_response(404, "Not found")
    try:
        fh = storage.open(key)
    except FileNotFoundError:
        return text_response(404, "Not found")
    size = storage.size(key) or 0
    try:
        wanted = parse_range(request.META.get("HTTP_RANGE", ""), size)
    except ValueError:
        fh.close()
        response = text_response(416, "Range Not Satisfiable")
        response["Content-Range"] = f"bytes */{size}"
        return response
    first, last = wanted if wanted else (0, size - 1)
    response = StreamingHttpResponse(  # type: ignore[assignment]
        _stream(fh, first, last - first + 1, rows[0].repository_id),
        status=206 if wanted else 200,
        content_type=CONTENT_TYPE,
    )
    response["Content-Length"] = str(last - first + 1)
    if wanted:
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    response["Accept-Ranges"] = "bytes"
    if key.endswith(".zst.bundle"):
        # git (through curl) decodes this itself; the stored bytes are the zstd frame.
        response["Content-Encoding"] = "zstd"
    # A key names one content forever; a private object must not sit in shared caches.
    response["Cache-Control"] = IMMUTABLE if public else "private, no-store"
    return response
