"""One error format for the whole API, and the one place domain errors become HTTP statuses.

{"error": {"code": "name_taken", "message": "alice/demo already exists.",
           "fields": {"name": ["taken"]}}}
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from repos.errors import ServiceError


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    body: dict[str, Any] = {"code": code, "message": message}
    if fields:
        body["fields"] = fields
    return {"error": body}


def _flatten(detail) -> dict[str, list[str]]:
    if isinstance(detail, dict):
        return {str(k): [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in detail.items()}
    if isinstance(detail, list):
        return {"non_field_errors": [str(x) for x in detail]}
    return {}


def exception_handler(exc, context):
    if isinstance(exc, ServiceError):
        return Response(error_body(exc.code, exc.message, exc.fields), status=exc.status)
    if isinstance(exc, RequestDataTooBig):
        # A form body past DATA_UPLOAD_MAX_MEMORY_SIZE (JSON bodies: repos.api.parsers).
        return Response(error_body("too_large", str(exc)), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # an unexpected error: Django's 500 handling and logging apply
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        first = next(iter(fields.values()), ["Invalid input."])[0]
        response.data = error_body("invalid", first, fields)
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
        response.data = error_body(str(code), str(detail))
    if response.status_code == status.HTTP_401_UNAUTHORIZED and "WWW-Authenticate" not in response:
        response["WWW-Authenticate"] = 'Bearer realm="hostsite"'
    return response
