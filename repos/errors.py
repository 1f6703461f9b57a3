"""Domain errors with stable codes (Read the Docs' RepositoryError style).

Services raise these; the API maps them to HTTP in repos.api.errors and the web views show
their message next to the form. `fields` names the offending inputs.
"""

from __future__ import annotations

from hostsite.errors import InvalidInput, ServiceError

__all__ = [
    "Conflict",
    "Forbidden",
    "ImportFailed",
    "InvalidInput",
    "NotFound",
    "ServiceError",
]


class Conflict(ServiceError):
    code = "conflict"
    status = 409


class NotFound(ServiceError):
    code = "not_found"
    status = 404


class Forbidden(ServiceError):
    code = "forbidden"
    status = 403


class ImportFailed(ServiceError):
    code = "import_failed"
    status = 422
