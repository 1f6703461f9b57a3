"""The base of the domain errors: a message, a stable code and an HTTP status.

Here, at the bottom of the layers, so that the git runner (gitcore) raises an error every view,
task and API handler already catches as invalid input; the apps' own errors (repos.errors)
extend it. The API maps them in repos.api.errors; the web views show their message next to the
form.
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
