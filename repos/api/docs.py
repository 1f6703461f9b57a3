"""The API reference: Swagger UI, vendored by drf-spectacular-sidecar and served from our own
origin, reading the OpenAPI schema at /api/v1/schema/. It is started by a static script (no
inline code), so the site's strict CSP holds on this page too."""

from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe


@require_safe
def api_docs(request):
    return render(request, "api/docs.html", {"schema_url": reverse("api-schema")})
