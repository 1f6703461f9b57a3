"""The client's request body as the web server hands it over (wsgi.input), read so that a body
that cannot be read is the client's error, answered 400, never a 500 with a traceback.

gunicorn decodes a chunked body while the view reads it, so a malformed one fails inside
read(): a chunk size like `zz`, `-1` or one over the line limit, a chunk not followed by CRLF,
a bad chunk extension or trailer raise gunicorn's parser errors (gunicorn.http.errors; none of
them is an OSError), and a body that ends before its last chunk raises NoMoreData (an
OSError), as does a connection that breaks or times out. Every reader of a git request's raw
body reads it through ClientBody: requestbody.prepare_body (the fetch request and the push's
command list, before git starts; the rest of a push goes to git through the same object, and
gitcore.gitstream's Feeder stops git when it fails) and replication's forwarding to the primary.
"""

from __future__ import annotations

from repos.gitprotocol import GitHTTPError

MAX_REASON = 100


class ClientBodyError(GitHTTPError):
    """The request body could not be read: malformed framing, or it ended too soon."""

    def __init__(self, reason: str):
        super().__init__(400, f"malformed request body: {reason}")


class ClientBody:
    """A request body stream whose read errors are ClientBodyError."""

    def __init__(self, raw):
        self._raw = raw

    def read(self, size: int = -1) -> bytes:
        try:
            return self._raw.read(size)
        except Exception as exc:  # whatever the server's reader raises: see the module's docstring
            raise ClientBodyError(_reason(exc)) from None

    def close(self) -> None:
        close = getattr(self._raw, "close", None)
        if close is not None:
            close()


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return "the connection ended or broke before the body's end"
    # gunicorn's own words ("Invalid chunk size: b'zz'"): the client's bytes in repr, cut short.
    text = str(exc) or type(exc).__name__
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."
