"""Sealing short-lived secrets that must cross the Celery broker (an import's credentials).

The broker (Redis, or files under var/broker) is storage we do not control the retention of,
so a secret never travels there in clear: it is encrypted and authenticated with Fernet
(AES-128-CBC + HMAC-SHA256, with a timestamp) under a key derived from SECRET_KEY by HKDF, one
key per purpose. A sealed value is useless after `max_age` seconds, and to anyone without
SECRET_KEY; the web process seals, the worker opens, both share the settings.
"""

from __future__ import annotations

import base64
import json

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

# A queued import may wait behind others and be retried after a worker died; two days covers
# GIT_IMPORT_TIMEOUT (6 h) many times over without keeping the secret usable for long.
DEFAULT_MAX_AGE = 2 * 24 * 3600


class SealBroken(Exception):
    """The sealed value was tampered with, sealed under another key, or is too old."""


def _fernet(purpose: str) -> Fernet:
    key = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=f"hostsite seal v1: {purpose}".encode()
    ).derive(settings.SECRET_KEY.encode())  # type: ignore[union-attr]  # settings refuse to load without one
    return Fernet(base64.urlsafe_b64encode(key))


def seal(value: dict, *, purpose: str) -> str:
    return _fernet(purpose).encrypt(json.dumps(value, separators=(",", ":")).encode()).decode("ascii")


def unseal(token: str, *, purpose: str, max_age: int = DEFAULT_MAX_AGE) -> dict:
    try:
        value = json.loads(_fernet(purpose).decrypt(token.encode("ascii"), ttl=max_age))
    except (InvalidToken, UnicodeError, ValueError, TypeError, AttributeError):
        raise SealBroken("the sealed value cannot be opened") from None
    if not isinstance(value, dict):
        raise SealBroken("the sealed value is not what was sealed")
    return value
