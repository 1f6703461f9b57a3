"""The image proxy's one route: a signed external image (render.imageproxy verifies the URL,
repos.imagefetch fetches it), or a short refusal."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.http import require_safe

from render import imageproxy
from repos import imagefetch

# Whatever the bytes are, our origin never runs them: no script, no plugin, an opaque origin.
IMAGE_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox"


def _headers(response: HttpResponse, cache_seconds: int) -> HttpResponse:
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = IMAGE_CSP
    response["Cache-Control"] = f"public, max-age={cache_seconds}" if cache_seconds else "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


def _refusal(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
    return _headers(response, 60)


@require_safe
def image_proxy(request, signature: str, encoded: str):
    """Public: it serves third-party images only, and only those whose URL we signed."""
    if not settings.IMAGE_PROXY_ENABLED:
        return _refusal(404, "The image proxy is off.")
    url = imageproxy.verified_url(signature, encoded)
    if url is None:
        return _refusal(404, "No such image.")
    try:
        image = imagefetch.cached_fetch(url)
    except imagefetch.Refused as exc:
        return _refusal(exc.status, exc.message)
    response = HttpResponse(image.body, content_type=image.content_type)
    return _headers(response, settings.IMAGE_PROXY_CACHE_SECONDS)
