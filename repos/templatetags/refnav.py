"""`{% ref_switcher %}`: the branch and tag switcher of tree, file, history and repository
pages; `{% ref_tree_url repo ref %}`: the tree of a ref named in full (a workspace ref)."""

from __future__ import annotations

from urllib.parse import quote

from django import template
from django.urls import reverse

register = template.Library()

# The page kind a switcher entry opens, by the URL name of the page it is on.
_KINDS = {
    "repo-tree": "tree",
    "repo-blob": "blob",
    "repo-commits": "commits",
    "repo-commits-default": "commits",
}


def _base(repo) -> str:
    return reverse("repository", kwargs={"owner": repo.owner.username, "name": repo.name})


@register.inclusion_tag("repos/_switcher.html", takes_context=True)
def ref_switcher(context, repo, current: str, url_path: str = "") -> dict:
    """`current` is the ref or id the page shows; `url_path` the path in it, URL-encoded."""
    match = getattr(context.get("request"), "resolver_match", None)
    kind = _KINDS.get(getattr(match, "url_name", None) or "", "tree")
    base = _base(repo)
    short = current[:12] if len(current) == 40 and all(c in "0123456789abcdef" for c in current) else current
    return {
        "current": short,
        "base": base,
        "kind": kind,
        "url_path": url_path if kind != "tree" or url_path else "",
        "refs_url": f"{base}/refs.json",
        "branches_url": f"{base}/branches",
        "tags_url": f"{base}/tags",
    }


@register.simple_tag
def ref_tree_url(repo, ref: str) -> str:
    return f"{_base(repo)}/tree/{quote(ref.encode('utf-8', 'surrogateescape'))}"
