"""Bundles advertised through protocol v2: bundles' git access backend (repos.gitaccess),
named in settings.GIT_ACCESS_BACKENDS as bundles.access.BundleAccess.

git 2.40 added the `bundle-uri` command to upload-pack: with `uploadpack.advertiseBundleURIs`
it advertises the capability, and answers the command with every `bundle.*` key of its
configuration. We hand it the repository's bundle list per request, as `git -c` pairs built
by bundles.listing from the same entries as `/bundle-list`, so a client with
`transfer.bundleURI=true` clones from bundles without `--bundle-uri`. git 2.39 has neither
the setting nor the command: there this adds nothing.
"""

from __future__ import annotations

import functools

from django.conf import settings

from bundles import listing, selectors
from gitcore.git import git_version
from repos.gitaccess import BaseGitAccess, GitRequest
from repos.gitprotocol import wants_v2

ADVERTISE = ("uploadpack.advertiseBundleURIs", "true")


@functools.cache
def advertises_bundle_uris() -> bool:
    """Whether the server's git has the `bundle-uri` command (2.40 and newer); asked once."""
    return git_version() >= (2, 40, 0)


class BundleAccess(BaseGitAccess):
    def git_config(
        self, req: GitRequest, *, advertise: bool, refs: list[str] | None
    ) -> list[tuple[str, str]]:
        return git_config(req, advertise=advertise)


def git_config(req: GitRequest, *, advertise: bool) -> list[tuple[str, str]]:
    repo, client = req.repository, req.client
    if req.service != "upload-pack" or client is None or not wants_v2(client.protocol):
        return []  # pushes, and v0/v1 fetches, have no bundle-uri command
    if not advertises_bundle_uris():
        return []
    if advertise:
        # The capability only (one query): the list is asked for in a later POST, and a
        # client that is not interested must not cost storage checks.
        return [ADVERTISE] if selectors.has_listable(repo) else []
    # Every v2 POST (ls-refs, fetch, bundle-uri: we cannot tell which) gets the capability,
    # even when nothing is listable any more: a client that saw it in the advertisement may
    # send `command=bundle-uri`, and upload-pack dies on a command it does not advertise.
    listed = listing.listed_entries(
        repo,
        accept_encoding=client.accept_encoding,
        remote_addr=client.remote_addr,
        base_url=client.base_url,
        presence_max_age=settings.BUNDLE_PRESENCE_CACHE_SECONDS,
    )
    return [ADVERTISE, *listing.config_pairs(listed)] if listed.entries else [ADVERTISE]
