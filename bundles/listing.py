"""What goes into a repository's bundle list, for both ways git learns of it: the
`/bundle-list` view (`git clone --bundle-uri=...`) and the protocol v2 advertisement
(bundles.access). One function builds the entries, so storage down, a missing or damaged
object, signed URLs for private repositories, the flavor chosen by Accept-Encoding and the
per-network base URLs (BUNDLE_BASE_URLS) behave the same in both.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import threading
import time
from dataclasses import dataclass

from django.conf import settings

from bundles import build, selectors
from bundles.models import Flavor
from bundles.storage import BundleStorage, StorageError, get_storage
from repos import enqueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    list_id: str  # `[bundle "<id>"]`, the same for both flavors
    uri: str  # absolute: git 2.39 does not resolve relative URIs in a bundle list
    creation_token: int


@dataclass(frozen=True)
class Listing:
    entries: tuple[Entry, ...]
    size: int  # the bytes the entries add up to (the offload figure's "listed" bytes)


EMPTY = Listing((), 0)


def accepts_zstd(header: str) -> bool:
    """True if Accept-Encoding names zstd (or *) with a non-zero q."""
    for item in header.split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() not in ("zstd", "*"):
            continue
        match = re.search(r"q\s*=\s*([0-9.]+)", params)
        try:
            if match is None or float(match[1]) > 0:
                return True
        except ValueError:
            continue
    return False


def flavor_for(accept_encoding: str) -> str:
    return Flavor.ZSTD if accepts_zstd(accept_encoding) else Flavor.STANDARD


def route_for(address: str) -> str | None:
    """The base URL for this client from BUNDLE_BASE_URLS (public bundles only: private ones
    are served after an access check or through short-lived signed URLs)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    for network, base in settings.BUNDLE_BASE_URLS:
        if ip.version == network.version and ip in network:
            return base
    return None


# --- is the object there? -----------------------------------------------------------------------
# The list view asks storage every time (a stat, or a HEAD per object on S3): it is fetched
# once per `clone --bundle-uri`. The v2 advertisement is built for every upload-pack request of
# a repository with bundles (a clone makes three or four), so it reuses an answer younger than
# BUNDLE_PRESENCE_CACHE_SECONDS, and after storage failed it lists nothing for that long
# instead of making every fetch wait for botocore's retries. The cost of the cache: for at most
# that long, a v2 client may be sent to an object that just went missing; git then warns and
# fetches everything from the server, and the next list view or build drops the object.
# Per process: each web worker asks storage once a period.

_lock = threading.Lock()
_checked: dict[str, tuple[float, int | None]] = {}  # key -> (monotonic time, size or None)
_down_until = 0.0
_MAX_CACHED = 10_000


def _stored_size(storage: BundleStorage, key: str, *, max_age: float) -> int | None:
    global _down_until
    now = time.monotonic()
    if max_age > 0:
        if now < _down_until:
            raise StorageError("bundle storage failed recently")
        hit = _checked.get(key)
        if hit is not None and now - hit[0] < max_age:
            return hit[1]
    try:
        size = storage.size(key)
    except StorageError:
        with _lock:
            _down_until = now + settings.BUNDLE_PRESENCE_CACHE_SECONDS
        raise
    with _lock:
        if len(_checked) >= _MAX_CACHED:
            _checked.clear()
        _checked[key] = (now, size)
        _down_until = 0.0
    return size


def forget_presence() -> None:
    """Drop every cached answer (tests, and storage configuration changes)."""
    global _down_until
    with _lock:
        _checked.clear()
        _down_until = 0.0


# --- the entries --------------------------------------------------------------------------------


def listed_entries(
    repo, *, accept_encoding: str, remote_addr: str, base_url: str, presence_max_age: float = 0.0
) -> Listing:
    """The bundles to list for this client: the current generation in its flavor, cut before
    the first object that is gone (and that one dropped, and a build queued to replace it).

    `base_url` is the site's absolute URL as the client reached it (the file backend's
    objects are served by the app); `presence_max_age` > 0 lets an earlier storage check of
    that age stand (see above).
    """
    generation = selectors.current_generation(repo, flavor_for(accept_encoding))
    if not generation:
        return EMPTY
    storage = get_storage()
    # Private bundles never go through a shared mirror: their objects need an access check.
    route = route_for(remote_addr) if repo.is_public else None
    entries = []
    total = 0
    for bundle in generation:
        try:
            present = _stored_size(storage, bundle.storage_key, max_age=presence_max_age) == bundle.size
        except StorageError:
            # Storage is down: advertise nothing, and clones come from the server as before.
            log.warning(
                "bundle storage unreachable; listing no bundles for %s", repo.full_name, exc_info=True
            )
            return EMPTY
        if not present:
            build.drop_from(repo.pk, bundle.creation_token, reason=f"{bundle.storage_key} missing at listing")
            enqueue.after_commit("bundles.tasks.build_bundles", repo.pk)
            break
        if route:
            uri = route + storage.public_path(bundle.storage_key)
        else:
            uri = storage.url(bundle.storage_key, base_url=base_url, private=not repo.is_public)
        entries.append(Entry(bundle.list_id, uri, bundle.creation_token))
        total += bundle.size
    return Listing(tuple(entries), total)


def render_list(listing: Listing) -> str:
    """git's bundle list (Documentation/technical/bundle-uri.txt), config format."""
    lines = ["[bundle]", "\tversion = 1", "\tmode = all", "\theuristic = creationToken"]
    for entry in listing.entries:
        lines += [
            f'[bundle "{entry.list_id}"]',
            f"\turi = {entry.uri}",
            f"\tcreationToken = {entry.creation_token}",
        ]
    return "\n".join(lines) + "\n"


def config_pairs(listing: Listing) -> list[tuple[str, str]]:
    """The same list as `git -c` pairs, for upload-pack's `bundle-uri` command (git >= 2.40
    answers it with every `bundle.*` key of its configuration)."""
    pairs = [("bundle.version", "1"), ("bundle.mode", "all"), ("bundle.heuristic", "creationToken")]
    for entry in listing.entries:
        pairs += [
            (f"bundle.{entry.list_id}.uri", entry.uri),
            (f"bundle.{entry.list_id}.creationToken", str(entry.creation_token)),
        ]
    return pairs
