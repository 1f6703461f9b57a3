"""The S3 backend (boto3), for AWS or any S3-compatible store (MinIO, Ceph, moto).

Objects carry what a client needs with them: ContentType, ContentEncoding (zstd flavor) and an
immutable CacheControl, as keys are content-addressed. Large files go up in parallel parts
(TransferConfig); botocore retries throttling and 5xx with backoff ("standard" mode).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from bundles.objects import CHUNK, IMMUTABLE, StorageError, StoredObject, valid_key

# Parts of 64 MiB: a 1 GiB bundle is 16 requests, each retried on its own.
MULTIPART_THRESHOLD = 64 * 1024 * 1024
# Private repositories' bundles are handed out as pre-signed URLs valid this long: enough to
# start a clone of a large bundle, short enough that a leaked list is soon useless.
PRESIGNED_SECONDS = 3600


class S3Storage:
    def __init__(
        self,
        *,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        multipart_threshold: int = MULTIPART_THRESHOLD,
    ):
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = endpoint_url
        self.transfer = TransferConfig(
            multipart_threshold=multipart_threshold,
            multipart_chunksize=multipart_threshold,
            max_concurrency=4,
        )

    @functools.cached_property
    def client(self):
        # Made on first use: a protocol v2 fetch of a public repository only needs public URLs
        # (bundles.gitconfig), and a client costs 7 ms (165 ms the first time in a process).
        # SigV4 for pre-signed URLs too (botocore may otherwise sign them with the retired SigV2).
        config = Config(
            retries={"max_attempts": 8, "mode": "standard"},
            connect_timeout=10,
            read_timeout=120,
            signature_version="s3v4",
        )
        return boto3.client("s3", endpoint_url=self.endpoint_url, config=config)

    def _name(self, key: str) -> str:
        """`<prefix>/public/<sha256>.bundle`: the area comes with the key (bundles.storage)."""
        if not valid_key(key):
            raise StorageError(f"invalid bundle key {key!r}")
        return f"{self.prefix}/{key}" if self.prefix else key

    def put(self, key: str, path: Path, *, content_type: str, content_encoding: str | None = None) -> None:
        extra = {"ContentType": content_type, "CacheControl": IMMUTABLE}
        if content_encoding:
            extra["ContentEncoding"] = content_encoding
        try:
            # S3 makes an object visible only when its upload (all parts) completes, so no
            # reader ever sees part of one.
            self.client.upload_file(
                str(path), self.bucket, self._name(key), ExtraArgs=extra, Config=self.transfer
            )
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"upload of {key} failed: {exc}") from exc

    def head(self, key: str) -> dict | None:
        try:
            return self.client.head_object(Bucket=self.bucket, Key=self._name(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise StorageError(f"HEAD {key} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise StorageError(f"HEAD {key} failed: {exc}") from exc

    def size(self, key: str) -> int | None:
        head = self.head(key)
        return None if head is None else head["ContentLength"]

    def digest(self, key: str) -> StoredObject | None:
        """Reads the whole object back: publication checks what is stored, not what was sent."""
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._name(key))["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise StorageError(f"GET {key} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise StorageError(f"GET {key} failed: {exc}") from exc
        digest, size = hashlib.sha256(), 0
        with body:
            while chunk := body.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
        return StoredObject(size, digest.hexdigest())

    @contextlib.contextmanager
    def local_copy(self, key: str, scratch: Path) -> Iterator[Path]:
        target = scratch / f"seed-{uuid.uuid4().hex}.bundle"
        try:
            self.client.download_file(self.bucket, self._name(key), str(target), Config=self.transfer)
        except (BotoCoreError, ClientError) as exc:
            target.unlink(missing_ok=True)
            raise StorageError(f"GET {key} failed: {exc}") from exc
        try:
            yield target
        finally:
            target.unlink(missing_ok=True)

    def delete(self, key: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._name(key))
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"DELETE {key} failed: {exc}") from exc

    def public_path(self, key: str) -> str:
        """The object's path below a base URL that mirrors the bucket (a CDN, a regional endpoint)."""
        return self._name(key)

    def url(self, key: str, *, base_url: str = "", private: bool = False) -> str:
        """Public repositories: the object's plain URL (the bucket or its CDN serves it).
        Private ones: a pre-signed URL, handed out only in an access-checked bundle list."""
        if private:
            return self.client.generate_presigned_url(
                "get_object",
                Params={"Bucket": self.bucket, "Key": self._name(key)},
                ExpiresIn=PRESIGNED_SECONDS,
            )
        if self.endpoint_url:
            return f"{self.endpoint_url.rstrip('/')}/{self.bucket}/{self._name(key)}"
        return f"https://{self.bucket}.s3.amazonaws.com/{self._name(key)}"
