"""Browsing pages: tree, file, raw and archives (history, commit and compare: repos.views.history).

Every view starts with repo_or_404 (private repositories are 404 to outsiders) and turns
every bad input (unknown ref, `..` in a path, a page past the end, a non-hex id) into a 404,
never a 500. Object ids are resolved through the viewer's View (repos.visibility): an id of
taken-down or hidden work answers exactly as an unknown or malformed one, in any case and at
any length, so no page is an oracle for what exists.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable
from urllib.parse import quote, unquote_to_bytes

from django.conf import settings
from django.core.cache import cache
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from gitcore.git import piped, popen_git
from gitcore.gitstream import GitProcessResponse
from gitcore.oids import object_format
from render import blobrender, documents, rendering
from repos import archive, browse, enqueue, ratelimits
from repos.hooks import refspace
from repos.views import repo_or_404
from repos.visibility import view_for

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}  # never SVG: it can carry script
RAW_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox"
# A compare of more commits than compare.MAX_COMMITS shows this much of its diff at first
# (?all=1 shows the rest): rendering a megabyte of rows took most of a second.
RAW_INLINE_BYTES = 1024 * 1024  # smaller files are read through cat-file; larger ones streamed


def display(name: str) -> str:
    """A path for the page: bytes that are not UTF-8 (kept as surrogates) shown as U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def repo_base(repo) -> str:
    return reverse("repository", kwargs={"owner": repo.owner.username, "name": repo.name})


def url_for(repo, kind: str, ref: str, path: str = "") -> str:
    url = f"{repo_base(repo)}/{kind}/{quote(ref)}"
    if path:
        url += "/" + quote(path.encode("utf-8", "surrogateescape"))
    return url


NOT_FOUND = "no such ref"  # one message for unknown, malformed and hidden alike


def locate(request, owner: str, name: str, spec: str):
    """(repo, revision, entry) for `<ref>/<path>`, or 404."""
    repo = repo_or_404(request, owner, name)
    revision = browse.split_revision(repo.disk_path, spec.removesuffix("/"), view_for(repo, request.user))
    if revision is None:
        raise Http404(NOT_FOUND)
    item = browse.clean_path(revision.path)
    if item is None:
        raise Http404("bad path")
    entry = browse.entry_at(repo.disk_path, revision.sha, item)
    if entry is None and "%" in item:
        # A name that is not UTF-8 reaches us percent-encoded (Django keeps broken bytes as %XX).
        decoded = browse.clean_path(os.fsdecode(unquote_to_bytes(item)))
        if decoded:
            entry = browse.entry_at(repo.disk_path, revision.sha, decoded)
    if entry is None:
        raise Http404("no such path")
    return repo, revision, entry


def _crumbs(repo, revision, path: str) -> list[tuple[str, str]]:
    crumbs = [(repo.name, url_for(repo, "tree", revision.name))]
    parts = path.split("/") if path else []
    for i, part in enumerate(parts):
        crumbs.append((display(part), url_for(repo, "tree", revision.name, "/".join(parts[: i + 1]))))
    return crumbs


def tree_context(repo, revision, entry) -> dict:
    """The listing and README of one directory (also used by the repository page)."""
    entries = browse.list_tree(repo.disk_path, entry.sha, entry.path)
    rows = [
        {
            "name": display(e.name),
            "kind": e.kind,
            "size": e.size,
            "is_link": e.is_link,
            "url": url_for(repo, "tree" if e.is_dir else "blob", revision.name, e.path)
            if e.kind != "commit"
            else None,
        }
        for e in entries
    ]
    readme = rendering.find_readme(entries)
    readme_html = readme_text = None
    if readme is not None and (readme.size or 0) <= settings.BLOB_MAX_DISPLAY_BYTES:
        data = browse.read_blob(repo.disk_path, readme.sha)
        if not browse.is_binary(data):
            text = data.decode("utf-8", "replace")
            readme_html = documents.render_document(
                readme.name,
                text,
                directory=entry.path,
                blob_base=url_for(repo, "blob", revision.name),
                raw_base=url_for(repo, "raw", revision.name),
            )
            if readme_html is None:
                readme_text = text
    return {
        "entries": rows,
        "readme": readme and display(readme.name),
        "readme_html": readme_html,
        "readme_text": readme_text,
    }


def cached_tree_context(repo, revision, entry) -> dict:
    """tree_context, cached by the tree's id (and the names its links are built from): a
    directory at a given tree id never changes, and a moved branch names another tree."""
    parts = (
        browse.FRAGMENT_VERSION,
        str(repo.disk_path),
        entry.sha,
        repo_base(repo),
        revision.name,
        entry.path,
    )
    key = "browse:treepage:" + hashlib.sha256(repr(parts).encode("utf-8", "surrogateescape")).hexdigest()
    found = cache.get(key)
    if not isinstance(found, dict):
        found = tree_context(repo, revision, entry)
        cache.set(key, found, browse.FRAGMENT_SECONDS)
    return found


def page_context(repo, revision, entry, tab="code") -> dict:
    return {
        "repo": repo,
        "revision": revision,
        "path": display(entry.path),
        "crumbs": _crumbs(repo, revision, entry.path),
        "tab": tab,
        "commits_url": url_for(repo, "commits", revision.name, entry.path),
        "url_path": quote(entry.path.encode("utf-8", "surrogateescape")),  # for the ref switcher
        "archive_url": url_for(repo, "archive", revision.name),
    }


def tree(request, owner: str, name: str, spec: str):
    repo, revision, entry = locate(request, owner, name, spec)
    if entry.kind == "blob":
        return redirect(url_for(repo, "blob", revision.name, entry.path))
    if entry.kind != "tree":
        raise Http404("a submodule")
    return render(
        request,
        "repos/tree.html",
        {**page_context(repo, revision, entry), **cached_tree_context(repo, revision, entry)},
    )


def blob(request, owner: str, name: str, spec: str):
    repo, revision, entry = locate(request, owner, name, spec)
    if entry.kind == "tree":
        return redirect(url_for(repo, "tree", revision.name, entry.path))
    if entry.kind != "blob":
        raise Http404("a submodule")
    context = {
        **page_context(repo, revision, entry),
        "size": entry.size,
        "raw_url": url_for(repo, "raw", revision.name, entry.path),
        "permalink": url_for(repo, "blob", revision.sha, entry.path),
        "blame_url": url_for(repo, "blame", revision.name, entry.path),
        "is_link": entry.is_link,
        "is_document": documents.is_document(entry.name),
    }
    ext = os.path.splitext(entry.name.lower())[1]
    # Documents (Markdown, reStructuredText, notebooks) are shown rendered, their source at ?plain=1.
    as_document = context["is_document"] and request.GET.get("plain") != "1"
    shown_as = display(entry.name)
    later = _highlight_later(repo, entry.sha, shown_as)
    if (entry.size or 0) > settings.BLOB_MAX_DISPLAY_BYTES:
        context["too_large"] = True
    elif not as_document and (rows := blobrender.cached_rows(entry.sha, shown_as, later=later)) is not None:
        # A warm page reads neither the blob nor Pygments: the rows are cached by blob id.
        context.update(rows=rows.html, lines=rows.lines)
    else:
        data = browse.read_blob(repo.disk_path, entry.sha)
        if browse.is_binary(data):
            context["binary"] = True
            context["image"] = ext in IMAGE_TYPES
        elif as_document:
            text = data.decode("utf-8", "replace")
            context["lines"] = len(blobrender.split_lines(text))
            context["markdown"] = documents.render_document(
                entry.name,
                text,
                directory=entry.path.rpartition("/")[0],
                blob_base=url_for(repo, "blob", revision.name),
                raw_base=url_for(repo, "raw", revision.name),
            )
        else:
            text = data.decode("utf-8", "replace")
            rows = blobrender.file_rows(entry.sha, shown_as, text, later=later)
            context.update(rows=rows.html, lines=rows.lines)
    return render(request, "repos/blob.html", context)


def _highlight_later(repo, blob: str, path: str) -> Callable[[], None]:
    """What a file page cut at its highlighting budget asks for: the whole blob highlighted by a
    worker into the cache (render.blobrender.highlight_fully, through repos.tasks)."""
    return lambda: enqueue.after_commit("repos.tasks.highlight_blob", repo.pk, blob, path)


def raw(request, owner: str, name: str, spec: str):
    """The file's bytes, streamed. Never rendered by the browser as a page of our origin:
    text is text/plain, other bytes an attachment, and the CSP sandbox covers the rest."""
    repo, _revision, entry = locate(request, owner, name, spec)
    if entry.kind != "blob":
        raise Http404("not a file")
    proc = None
    if entry.size is not None and entry.size <= RAW_INLINE_BYTES:
        data = browse.read_blob(repo.disk_path, entry.sha)  # the worker's cat-file: no process
        head = data[:8000]
    else:
        proc = popen_git(
            ["cat-file", "blob", entry.sha],
            repo=repo.disk_path,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        head = piped(proc.stdout).read(8000)
    ext = os.path.splitext(entry.name.lower())[1]
    filename = re.sub(r"[^A-Za-z0-9._-]", "_", display(entry.name)) or "file"
    if not browse.is_binary(head):
        content_type, disposition = "text/plain; charset=utf-8", "inline"
    elif ext in IMAGE_TYPES:
        content_type, disposition = IMAGE_TYPES[ext], "inline"
    else:
        content_type, disposition = "application/octet-stream", "attachment"
    response: StreamingHttpResponse
    if proc is None:  # one chunk, as the streamed ones are read
        response = StreamingHttpResponse(iter((data,)), content_type=content_type)
    else:
        response = GitProcessResponse(proc, content_type=content_type, prefix=head)
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = RAW_CSP
    if entry.size is not None:
        response["Content-Length"] = str(entry.size)
    return response


def url_rev(rev: str) -> str:
    """A revision named in a URL: branches, tags, workspace refs and ids (resolve_commit asks
    the viewer's View about the ref). Full names of other refs (archived or taken-down work,
    imported namespaces) are not browsable by name."""
    if rev.startswith("refs/") and not rev.startswith(("refs/heads/", "refs/tags/", refspace.WORKSPACES)):
        raise Http404(NOT_FOUND)
    return rev


@ratelimits.limit("archive")
def archive_view(request, owner: str, name: str, spec: str):
    repo = repo_or_404(request, owner, name)
    suffix = next((s for s in archive.FORMATS if spec.endswith(s)), None)
    if suffix is None:
        raise Http404("unknown archive format")
    ref = spec[: -len(suffix)]
    sha = browse.resolve_commit(repo.disk_path, url_rev(ref), view_for(repo, request.user))
    if sha is None:
        raise Http404(NOT_FOUND)
    is_id = (prefix := object_format(repo.disk_path).parse_prefix(ref)) is not None and sha.startswith(prefix)
    label = sha[:12] if is_id else ref
    return archive.archive_response(repo.disk_path, sha, archive.archive_basename(repo.name, label), suffix)
