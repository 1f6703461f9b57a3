"""Reads: which bundles a repository currently advertises."""

from __future__ import annotations

from bundles.models import Bundle, BundleState, Flavor, Kind
from bundles.storage import area_for
from repos.models import RefUpdate

CANONICAL_PREFIXES = ("refs/heads/", "refs/tags/")


def listable(repo):
    """Published bundles stored in the area the repository's visibility calls for now.

    Filtering on the area makes a visibility change take effect at the first list after it,
    however the change was made; bundles of the other area (and legacy keys without an area)
    are left for the next build to replace (bundles.build.retire_other_areas).
    """
    return Bundle.objects.filter(
        repository_id=repo.pk, state=BundleState.PUBLISHED, storage_key__startswith=f"{area_for(repo)}/"
    )


def current_generation(repo, flavor: str = Flavor.STANDARD) -> list[Bundle]:
    """The newest listable base and the incrementals after it, oldest first (one query).

    Publishing a base marks the previous generation deleted in the same transaction, so this
    is normally every listable row; cutting at the newest base guards against a
    half-superseded state.
    """
    rows = list(listable(repo).filter(flavor=flavor).order_by("creation_token"))
    bases = [i for i, row in enumerate(rows) if row.kind == Kind.BASE]
    return rows[bases[-1] :] if bases else []


def has_listable(repo) -> bool:
    return listable(repo).filter(kind=Kind.BASE).exists()


def covered_tips(generation: list[Bundle]) -> dict[str, str]:
    """The refs a client has after applying the generation (later bundles win)."""
    tips: dict[str, str] = {}
    for bundle in generation:
        tips.update(bundle.tips)
    return tips


def rows_for_key(key: str):
    """Rows naming an object that may still be served: published, or superseded but still in
    its grace period (the object is deleted and storage_key cleared when that ends)."""
    return Bundle.objects.filter(
        storage_key=key, state__in=[BundleState.PUBLISHED, BundleState.DELETED]
    ).select_related("repository", "repository__owner")


def push_moved_canonical_refs(push_id: int) -> bool:
    """Whether a push moved a branch or a tag: bundles never carry workspace refs."""
    refs = RefUpdate.objects.filter(push_id=push_id).values_list("ref", flat=True)
    return any(ref.startswith(CANONICAL_PREFIXES) for ref in refs)
