"""Domain errors with stable codes (Read the Docs' RepositoryError style).

Services raise these; the API maps them to HTTP in repos.api.errors and the web views show
their message next to the form. `fields` names the offending inputs.
"""

from __future__ import annotations


class ServiceError(Exception):
    code = "error"
    status = 400

    def __init__(self, message: str, *, code: str | None = None, fields: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.fields = fields or {}


class InvalidInput(ServiceError):
    code = "invalid"
    status = 400


class InvalidGitArgument(InvalidInput):
    """Input that cannot be handed to git at all (a NUL byte: no argv or ref can hold one).
    Raised by the git runner itself, whichever view or task let the input through."""

    code = "invalid"


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
