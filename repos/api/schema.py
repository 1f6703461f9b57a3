"""OpenAPI descriptions of the API's authentication schemes (drf-spectacular extensions)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class AccessTokenScheme(OpenApiAuthenticationExtension):
    target_class = "repos.auth.AccessTokenAuthentication"
    name = "accessToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal access token (hst_...). HTTP Basic <username>:<token> also works.",
        }


class PasswordBasicScheme(OpenApiAuthenticationExtension):
    target_class = "repos.auth.PasswordBasicAuthentication"
    name = "passwordBasic"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "basic",
            "description": "Account password; accepted only to create a token (POST /api/v1/user/tokens).",
        }


# Statuses any operation may answer, in the one error format (repos.api.errors): bad input
# (a control character in the path, malformed JSON), authentication, access, a missing object,
# a rate limit, and a database that stayed busy (503 with Retry-After, repos.middleware).
_COMMON = {
    "400": "Invalid input.",
    "401": "Authentication required, or the credentials are not valid.",
    "403": "Not allowed (role, token scope, or a moderation rule).",
    "404": "Not found, or not visible to you.",
    "429": "Over a rate limit; retry after the Retry-After header's seconds.",
    "503": "The server is busy; retry after the Retry-After header's seconds.",
}
# ...and operations that change something: a conflicting state, an import that failed, and
# request bodies the API does not take (too large, or not JSON or a form).
_WRITES = {
    "409": "Conflicts with the current state.",
    "413": "The request body is too large.",
    "415": "Unsupported request body media type.",
    "422": "Well-formed but cannot be carried out.",
}
# Endpoints about the signed-in user, and moderation: never anonymous. Every other read also
# answers anonymous requests (public repositories, users), which the schema has to say.
_ALWAYS_AUTHENTICATED = ("/api/v1/user/", "/api/v1/notifications", "/api/v1/moderation")
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "fields": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}


def document_errors(result, generator, request, public):
    """drf-spectacular postprocessing hook: every operation documents the API's error answers."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            codes = dict(_COMMON)
            if method not in ("get", "head"):
                codes.update(_WRITES)
            for code, description in codes.items():
                operation["responses"].setdefault(code, {"description": description, "content": error})
            security = operation.get("security")
            if (
                method in ("get", "head")
                and security
                and {} not in security
                and path != "/api/v1/user"
                and not path.startswith(_ALWAYS_AUTHENTICATED)
            ):
                security.append({})
    return result
