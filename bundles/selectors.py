"""Reads: which bundles a repository currently advertises."""

from __future__ import annotations

from bundles.models import Bundle, BundleState, Flavor, Kind


def current_generation(repo_id: int, flavor: str = Flavor.STANDARD) -> list[Bundle]:
    """The newest published base and the incrementals after it, oldest first.

    Publishing a base marks the previous generation deleted in the same transaction, so this
    is normally every published row; the token bound guards against a half-superseded state.
    """
    published = Bundle.objects.filter(repository_id=repo_id, state=BundleState.PUBLISHED, flavor=flavor)
    base = published.filter(kind=Kind.BASE).order_by("-creation_token").first()
    if base is None:
        return []
    return list(published.filter(creation_token__gte=base.creation_token).order_by("creation_token"))


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
