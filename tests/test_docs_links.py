"""Every link in README.md and docs/*.md leads to a file of the repository, and nowhere else."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent
DOCS = sorted([BASE_DIR / "README.md", *(BASE_DIR / "docs").glob("*.md")])
# Inline links and images, [text](target) and ![alt](target), outside code.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)


def prose(text: str) -> str:
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    return LINK.findall(prose(text))


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces to -."""
    found = set()
    for heading in HEADING.findall(FENCE.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def problem(doc: Path, target: str) -> str | None:
    """Why a link from doc is wrong, or None."""
    parts = urlsplit(target)
    if parts.scheme in {"http", "https"}:
        return None if parts.hostname in LOCAL_HOSTS else "points outside the repository"
    if parts.scheme or parts.netloc:
        return "points outside the repository"
    if parts.path.startswith("/"):
        return "is absolute; links are relative to the page"
    resolved = (doc.parent / unquote(parts.path)).resolve() if parts.path else doc
    if not resolved.is_relative_to(BASE_DIR):
        return "leaves the repository"
    if not resolved.exists():
        return "names no file of the repository"
    if parts.fragment and resolved.suffix == ".md" and parts.fragment not in anchors(resolved.read_text()):
        return f"names no heading #{parts.fragment} there"
    return None


def test_the_pages_exist():
    names = {doc.name for doc in DOCS}
    for page in [
        "architecture.md",
        "configuration.md",
        "git-http.md",
        "workspaces.md",
        "bundles.md",
        "moderation.md",
        "api.md",
        "operations.md",
    ]:
        assert page in names


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(BASE_DIR)))
def test_every_link_resolves_inside_the_repository(doc: Path):
    found = links(doc.read_text())
    wrong = [f"{target} {why}" for target in found if (why := problem(doc, target))]
    assert not wrong, f"{doc.relative_to(BASE_DIR)}: " + "; ".join(wrong)


def test_every_docs_page_is_reachable_from_the_readme():
    readme = BASE_DIR / "README.md"
    linked = {(readme.parent / urlsplit(t).path).resolve() for t in links(readme.read_text())}
    unlinked = [doc.name for doc in DOCS if doc != readme and doc.resolve() not in linked]
    assert not unlinked, f"README.md links no {unlinked}"


def test_no_page_sends_a_reader_to_the_design_document_outside_the_repository():
    for doc in DOCS:
        text = doc.read_text()
        assert "DESIGN.md" not in text and "../shared" not in text, doc.name


def test_the_checker_tells_good_links_from_bad(tmp_path):
    doc = BASE_DIR / "docs" / "architecture.md"
    assert problem(doc, "configuration.md#core") is None
    assert problem(doc, "configuration.md#nothing") == "names no heading #nothing there"
    assert problem(doc, "../README.md") is None
    assert problem(doc, "#the-layers") is None
    assert problem(doc, "#no-such-heading") == "names no heading #no-such-heading there"
    assert problem(doc, "operations.md#on-one-machine-make-run") is None
    assert problem(doc, "http://127.0.0.1:8000/alice/hello") is None
    assert problem(doc, "nothing-here.md") == "names no file of the repository"
    assert problem(doc, "../../shared/DESIGN.md") == "leaves the repository"
    assert problem(doc, "https://example.org/") == "points outside the repository"
    assert problem(doc, "mailto:someone@example.org") == "points outside the repository"
    assert problem(doc, "/etc/passwd") == "is absolute; links are relative to the page"
    assert links("[a](b.md) `[c](d.md)`\n```\n[e](f.md)\n```\n![g](h.png)") == ["b.md", "h.png"]
