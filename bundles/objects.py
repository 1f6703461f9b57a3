"""The names and values every bundle store shares (bundles.storage's file backend, bundles.s3):
kept below both, so the S3 backend needs nothing from the module that picks it."""

from __future__ import annotations

import re
from dataclasses import dataclass

CONTENT_TYPE = "application/x-git-bundle"
IMMUTABLE = "public, max-age=31536000, immutable"
PUBLIC, PRIVATE = "public", "private"
KEY = re.compile(r"(?:(public|private)/)?[0-9a-f]{64}(\.zst)?\.bundle")
CHUNK = 1024 * 1024


class StorageError(Exception):
    """The store could not be reached or refused the operation (lists then omit bundles)."""


@dataclass(frozen=True)
class StoredObject:
    size: int
    sha256: str


def valid_key(key: str) -> bool:
    return bool(KEY.fullmatch(key))
