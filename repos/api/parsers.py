"""The API's JSON parser: bounded in size and in nesting depth.

Python's json module recurses once per nesting level, so a body of a few thousand '[' raised
RecursionError (a 500) before any view ran; no request of this API nests more than a few
levels. The size limit holds the whole body in memory at most once, and a larger body gets
413 without being read further. Git's smart HTTP bodies never pass through here (they have
their own limits in repos.pipeline).
"""

from __future__ import annotations

import json
import re

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer

# A JSON string (escapes included), removed before brackets are counted: a '[' inside a
# string is not nesting.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"
    default_detail = "The request body is too large."


def nesting_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON text nests arrays and objects deeper than `limit`, without parsing it
    (parsing is what recursion would break)."""
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match[0] in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


class JSONParser(BaseParser):
    """application/json with a body limit (API_MAX_BODY) and a nesting limit (API_MAX_JSON_DEPTH).

    Not a subclass of DRF's JSONParser on purpose: DRF reads the whole body for its own
    JSONParser before calling it; this one reads at most one byte past the limit."""

    media_type = "application/json"
    renderer_class = JSONRenderer

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.API_MAX_BODY
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(f"The request body is larger than {limit} bytes, the API's limit.")
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            raise ParseError(f"JSON parse error - the body is not valid {encoding}.") from None
        depth = settings.API_MAX_JSON_DEPTH
        if nesting_exceeds(text, depth):
            raise ParseError(f"JSON parse error - nested more than {depth} levels deep, the API's limit.")
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
