"""Where bundle objects live, behind one interface.

Keys are content-addressed (`<area>/<sha256>.bundle`, `<area>/<sha256>.zst.bundle`), so writing
an object that already exists is a no-op and a key never names two contents (mozilla's
generate_hg_s3_bundles.py names its bundles the same way). The area is `public` or `private`,
the repository's visibility when the bundle was built: an operator can make `public/` readable
by anyone (a bucket policy, a CDN) and keep `private/` behind signed URLs. Keys without an area
were stored before the split; they are never listed again and are pruned like superseded ones.
The filesystem backend is the embedded default and is served by the app
(bundles.views.bundle_object).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO, Protocol

from django.conf import settings

from bundles.objects import (  # noqa: F401 - the storage interface's names, used from here
    CHUNK,
    CONTENT_TYPE,
    IMMUTABLE,
    PRIVATE,
    PUBLIC,
    StorageError,
    StoredObject,
    valid_key,
)
from bundles.objects import KEY as _KEY
from repos.locking import database_scope


def area_for(repo) -> str:
    """Where the bundles of this repository belong now."""
    return PUBLIC if repo.is_public else PRIVATE


def key_area(key: str) -> str | None:
    """`public` or `private`; None for a key stored before areas existed (or no key)."""
    match = _KEY.fullmatch(key)
    return match[1] if match else None


def file_digest(path: Path) -> StoredObject:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return StoredObject(size, digest.hexdigest())


class BundleStorage(Protocol):
    def put(self, key: str, path: Path, *, content_type: str, content_encoding: str | None) -> None: ...
    def size(self, key: str) -> int | None: ...
    def digest(self, key: str) -> StoredObject | None: ...
    def delete(self, key: str) -> None: ...
    def url(self, key: str, *, base_url: str, private: bool = False) -> str: ...

    def public_path(self, key: str) -> str: ...

    def local_copy(self, key: str, scratch: Path) -> AbstractContextManager[Path]:
        """The object as a file on this machine while the block runs (a replica seeds a copy
        of a repository from it): the file itself here, a download into `scratch` on S3."""
        ...


class FileStorage:
    """Objects under one directory (`public/`, `private/`); the app serves them, so url() points
    back at the app, which checks access either way."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        if not valid_key(key):  # keys reach the filesystem: nothing but our own names
            raise StorageError(f"invalid bundle key {key!r}")
        return self.root / key

    def put(self, key: str, path: Path, *, content_type: str = CONTENT_TYPE, content_encoding=None) -> None:
        # content_type / content_encoding are not stored: the view derives them from the
        # Bundle row (the flavor), as S3 stores them with the object.
        final = self.path(key)
        directory = final.parent  # root/public or root/private (root itself for legacy keys)
        directory.mkdir(parents=True, exist_ok=True)
        # Written even when the key exists: a damaged object of the same name is replaced,
        # and readers keep the inode they opened.
        # A temporary name in the same directory, fsynced, then renamed: a reader never sees
        # a partial object, and a crash leaves only a `.tmp-*` file behind.
        tmp = directory / f".tmp-{uuid.uuid4().hex}"
        try:
            with open(path, "rb") as src, open(tmp, "wb") as dst:
                while chunk := src.read(CHUNK):
                    dst.write(chunk)
                dst.flush()
                os.fsync(dst.fileno())
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the rename itself survives a power cut
        finally:
            os.close(dir_fd)

    def size(self, key: str) -> int | None:
        try:
            return self.path(key).stat().st_size
        except FileNotFoundError:
            return None

    def digest(self, key: str) -> StoredObject | None:
        try:
            return file_digest(self.path(key))
        except FileNotFoundError:
            return None

    def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def open(self, key: str) -> BinaryIO:
        return open(self.path(key), "rb")

    @contextlib.contextmanager
    def local_copy(self, key: str, scratch: Path) -> Iterator[Path]:
        path = self.path(key)
        if not path.is_file():
            raise StorageError(f"bundle object {key} is missing")
        yield path

    def url(self, key: str, *, base_url: str, private: bool = False) -> str:
        # Private or not, the app serves it after its own access check (bundles.views).
        return f"{base_url.rstrip('/')}/{self.public_path(key)}"

    def public_path(self, key: str) -> str:
        """The object's path below a base URL that mirrors this storage (a CDN in front)."""
        return f"bundles/{key}"


def get_storage() -> BundleStorage:
    config = settings.BUNDLE_STORAGE
    if config["backend"] == "file":
        return FileStorage(config["path"])
    if config["backend"] == "s3":
        # Here: boto3 is loaded only by sites that store bundles on S3, not by every process.
        from bundles.s3 import S3Storage

        return S3Storage(
            bucket=config["bucket"], prefix=config["prefix"], endpoint_url=config["endpoint_url"]
        )
    raise StorageError(f"unknown bundle storage backend {config['backend']!r}")


def scratch_dir(repo_id: int) -> Path:
    """A private temporary directory for one build, on the same disk as VAR_DIR.

    Called under the repository's build claim (bundles.locking): any other directory of this
    repository is then a killed build's leftover, and is removed first. Per database, as the
    claim is, so another test run or deployment sharing VAR_DIR keeps its own.
    """
    base = Path(settings.VAR_DIR) / "tmp"
    base.mkdir(parents=True, exist_ok=True)
    prefix = f"bundle-{int(repo_id)}-{database_scope()}-"
    for leftover in base.glob(f"{prefix}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
