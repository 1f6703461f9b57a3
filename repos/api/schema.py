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
