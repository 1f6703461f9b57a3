"""The REST API's settings (DRF and drf-spectacular), kept beside hostsite.settings, which
imports them: the API's parsers, authentication, the one token-scope rule, pagination, errors
and the schema's names."""

from __future__ import annotations

from hostsite.env import env_int

# The API takes JSON bodies only (repos.api.parsers; anything else 415): larger ones get 413,
# deeper ones 400.
API_MAX_BODY = env_int("API_MAX_BODY_KB", 1024, minimum=1) * 1024
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 64, minimum=2, maximum=500)
REST_FRAMEWORK = {
    "DEFAULT_PARSER_CLASSES": ["repos.api.parsers.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "repos.auth.AccessTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["repos.api.permissions.TokenScope"],
    # Reads and writes per token, per session user, or per address (repos.ratelimits).
    "DEFAULT_THROTTLE_CLASSES": ["repos.ratelimits.ApiThrottle"],
    "DEFAULT_PAGINATION_CLASS": "repos.api.pagination.Pagination",
    "PAGE_SIZE": 30,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "repos.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "hostsite API",
    "DESCRIPTION": "Repositories, tokens and workspaces on hostsite.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Fields named alike with other choices (a proposal's `state`) get a name of their own.
    "ENUM_NAME_OVERRIDES": {
        "CommitStatusStateEnum": "repos.models.statuses.StatusState",
        # One delivery choice per notification kind: one enum, not one per field name.
        "NotificationDeliveryEnum": "notifications.models.Delivery",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "repos.api.schema.document_errors",
    ],
}
