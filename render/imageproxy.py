"""External images of rendered documents, served from our own origin (as GitHub's camo).

Pages allow images from our origin only (`img-src 'self' data:`), and an image loaded straight
from a third party would tell it who reads what. So the renderers (render.rendering.sanitize)
rewrite each external image to `/_img/<signature>/<hex of the URL>`; only URLs we signed are
fetched (by repos.imagefetch, through the SSRF guard), so the proxy is no open relay for
arbitrary URLs. This module signs and verifies those URLs and knows each image type's first
bytes; it fetches nothing.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.urls import reverse
from django.utils.crypto import constant_time_compare, salted_hmac

MAX_URL = 2048
# The module's dotted name before it moved to render, kept: every signature in a cached
# document or an open page was made with it, and another salt would break those images.
_SALT = "repos.imageproxy"
_SIGNATURE_HEX = 40


def _signature(url: str, secret: str | bytes) -> str:
    return salted_hmac(_SALT, url, secret=secret, algorithm="sha256").hexdigest()[:_SIGNATURE_HEX]


def proxy_url(url: str) -> str:
    encoded = url.encode().hex()
    return reverse(
        "image-proxy", kwargs={"signature": _signature(url, settings.SECRET_KEY), "encoded": encoded}
    )


def rewrite_src(value: str) -> str | None:
    """The proxy URL for an external image's `src`, or None to leave `value` alone (relative,
    another scheme, too long, or the proxy is off)."""
    if not settings.IMAGE_PROXY_ENABLED:
        return None
    if value.startswith("//"):
        value = "https:" + value
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or len(value) > MAX_URL:
        return None
    return proxy_url(value)


def verified_url(signature: str, encoded: str) -> str | None:
    """The URL a proxy path names, if we signed it (SECRET_KEY or one of its fallbacks)."""
    if len(encoded) > 2 * MAX_URL:
        return None
    try:
        url = bytes.fromhex(encoded).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    for secret in (settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())):
        if constant_time_compare(signature, _signature(url, secret)):
            return url
    return None


def sniff(content_type: str, head: bytes) -> bool:
    """Whether the first bytes are what `content_type` says: one of the types the proxy answers
    with (repos.imagefetch.CONTENT_TYPES) or a notebook output's; any other type is False."""
    if content_type == "image/png":
        return head.startswith(b"\x89PNG\r\n\x1a\n")
    if content_type == "image/jpeg":
        return head.startswith(b"\xff\xd8\xff")
    if content_type == "image/gif":
        return head.startswith((b"GIF87a", b"GIF89a"))
    if content_type == "image/webp":
        return head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    if content_type == "image/avif":
        return head[4:8] == b"ftyp" and (b"avif" in head[8:64] or b"avis" in head[8:64])
    if content_type == "image/x-icon":
        return head.startswith(b"\x00\x00\x01\x00")
    if content_type == "image/svg+xml":
        text = head[:4096].removeprefix(b"\xef\xbb\xbf").lstrip().lower()
        return text.startswith(b"<") and b"<svg" in text
    return False
