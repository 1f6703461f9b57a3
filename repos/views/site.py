"""Site-wide files browsers ask for by a fixed path."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

# The SVG icon (static/img/favicon.svg) drawn at 32 px, for browsers that ask for the .ico.
FAVICON = settings.BASE_DIR / "static" / "img" / "favicon.ico"


@require_safe
@cache_control(public=True, max_age=86400)
def favicon(request):
    """/favicon.ico, which browsers fetch on their own for pages without a <link rel="icon">
    (raw files, JSON): a real icon, not a redirect."""
    return HttpResponse(FAVICON.read_bytes(), content_type="image/vnd.microsoft.icon")
