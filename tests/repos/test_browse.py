"""Browsing pages against real repositories: tree, file, raw, history, commit, compare,
archives and the repository page."""

from __future__ import annotations

import io
import subprocess
import tarfile
import urllib.request

import pytest
import zstandard
from django.test import Client

from gitcore import catfile
from repos import compare
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

PY = 'def greet(name):\n    return "<b>" + name\n'


@pytest.fixture
def work(tmp_path, git_home):
    return Work(tmp_path / "work", git_home)


@pytest.fixture
def project(work):
    """main: a README, a package, a binary, a moved file; feature/deep/x: one commit more; v1 tag."""
    work.commit(
        "first\n\nThe long body\nof the first commit.",
        {
            "README.md": "# Proj\n\nSee [the guide](docs/guide.md) and ![logo](img/logo.png).\n",
            "pkg/app.py": PY,
            "docs/guide.md": "# Guide\n\n[back](../README.md)\n",
            "old.txt": "one\ntwo\nthree\n" * 5,
            "img/logo.png": b"\x89PNG\r\n\x1a\n\0\0\0binary",
            "data.bin": b"\0\1\2\3",
        },
    )
    work.git("tag", "v1")
    work.git("mv", "old.txt", "new.txt")
    work.commit("rename old to new", {"pkg/app.py": PY + "# more\n"})
    work.git("checkout", "--quiet", "-b", "feature/deep/x")
    work.commit("feature work", {"pkg/feature.py": "X = 1\n"})
    work.git("checkout", "--quiet", "main")
    work.commit("main moves on", {"main-only.txt": "m\n"})
    return work


@pytest.fixture
def repo(project):
    return project.publish()


def get(path, **kw):
    return Client().get(path, **kw)


def text(response) -> str:
    assert response.status_code == 200, (response.status_code, response.content[:500])
    return response.content.decode()


def test_tree_root_lists_directories_first_and_renders_the_readme(repo):
    page = text(get("/olga/proj/tree/main"))
    names = [part.split('">', 1)[1].split("<", 1)[0] for part in page.split('<td class="name"><a href="')[1:]]
    assert names == ["docs", "img", "pkg", "data.bin", "main-only.txt", "new.txt", "README.md"]
    # Relative links go to the file view, relative images to raw content, both at the same ref.
    assert 'href="/olga/proj/blob/main/docs/guide.md"' in page
    assert 'src="/olga/proj/raw/main/img/logo.png"' in page
    assert 'href="/olga/proj/tree/main/pkg"' in page


def test_subdirectory_tree_resolves_relative_links_from_there(repo):
    page = text(get("/olga/proj/tree/main/docs/"))
    assert "guide.md" in page and "pkg" not in page.split("<table", 1)[1].split("</table>", 1)[0]
    guide = text(get("/olga/proj/blob/main/docs/guide.md"))
    assert 'href="/olga/proj/blob/main/README.md"' in guide  # ../README.md from docs/


def test_refs_with_slashes_tags_and_ids_resolve_by_longest_prefix(repo, project):
    page = text(get("/olga/proj/tree/feature/deep/x/pkg"))
    assert "feature.py" in page and ">feature/deep/x<" in page
    assert "feature.py" not in text(get("/olga/proj/tree/main/pkg"))
    assert "new.txt" not in text(get("/olga/proj/tree/v1")) and "old.txt" in text(get("/olga/proj/tree/v1"))
    short = project.git("rev-parse", "--short=7", "v1")
    assert "old.txt" in text(get(f"/olga/proj/tree/{short}"))
    assert get("/olga/proj/tree/feature/deep/nope").status_code == 404
    assert get("/olga/proj/tree/main/missing-dir").status_code == 404


def test_blob_is_highlighted_and_escaped(repo):
    page = text(get("/olga/proj/blob/main/pkg/app.py"))
    assert 'id="blob-lines"' in page and '<span class="k">def</span>' in page
    assert '<span class="s2">&quot;&lt;b&gt;&quot;</span>' in page and "<b>" not in page
    assert 'href="/olga/proj/raw/main/pkg/app.py"' in page and "3 lines" in page


def test_blob_of_a_directory_redirects_to_the_tree_and_back(repo):
    response = get("/olga/proj/blob/main/pkg")
    assert response.status_code == 302 and response["Location"] == "/olga/proj/tree/main/pkg"
    response = get("/olga/proj/tree/main/new.txt")
    assert response.status_code == 302 and response["Location"] == "/olga/proj/blob/main/new.txt"


def test_binary_and_oversized_files_are_offered_as_downloads(repo, settings):
    page = text(get("/olga/proj/blob/main/data.bin"))
    assert "Binary file not shown" in page and 'href="/olga/proj/raw/main/data.bin"' in page
    image = text(get("/olga/proj/blob/main/img/logo.png"))
    assert '<img class="blob-image" src="/olga/proj/raw/main/img/logo.png"' in image
    settings.BLOB_MAX_DISPLAY_BYTES = 10
    big = text(get("/olga/proj/blob/main/pkg/app.py"))
    assert "too large to show" in big and 'id="blob-lines"' not in big


def test_markdown_file_renders_with_a_source_view(repo):
    page = text(get("/olga/proj/blob/main/README.md"))
    assert "<h1>Proj</h1>" in page
    source = text(get("/olga/proj/blob/main/README.md?plain=1"))
    assert "<h1>Proj</h1>" not in source and "# Proj" in source


def raw_bytes(response) -> bytes:
    return b"".join(response.streaming_content)


def test_raw_streams_text_and_binary_with_safe_headers(repo):
    response = get("/olga/proj/raw/main/pkg/app.py")
    assert response.status_code == 200 and raw_bytes(response) == (PY + "# more\n").encode()
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert (
        response["X-Content-Type-Options"] == "nosniff" and "sandbox" in response["Content-Security-Policy"]
    )
    binary = get("/olga/proj/raw/main/data.bin")
    assert raw_bytes(binary) == b"\0\1\2\3" and binary["Content-Type"] == "application/octet-stream"
    assert binary["Content-Disposition"] == 'attachment; filename="data.bin"'
    assert get("/olga/proj/raw/main/pkg").status_code == 404


def test_commit_log_is_paginated_without_counting_history(work):
    for i in range(57):
        work.commit(f"commit number {i}", {"counter.txt": f"{i}\n"})
    work.commit("touches another file", {"other.txt": "o\n"})
    work.publish()
    first = text(get("/olga/proj/commits/main"))
    assert first.count('<li><a class="sha"') == 50 and "touches another file" in first
    assert 'rel="next" href="?page=2"' in first and 'rel="prev"' not in first
    second = text(get("/olga/proj/commits/main?page=2"))
    assert second.count('<li><a class="sha"') == 8 and "commit number 0<" in second
    assert 'rel="prev" href="?page=1"' in second and 'rel="next"' not in second
    assert get("/olga/proj/commits/main?page=3").status_code == 404
    assert text(get("/olga/proj/commits")).count('<li><a class="sha"') == 50  # the default branch
    only = text(get("/olga/proj/commits/main/other.txt"))
    assert only.count('<li><a class="sha"') == 1 and "touches another file" in only


def test_commit_page_shows_message_parents_and_diff_with_renames(repo, project):
    sha = project.git("rev-parse", "main~1")
    parent = project.git("rev-parse", "main~2")
    page = text(get(f"/olga/proj/commit/{sha}"))
    assert "rename old to new" in page and f'href="/olga/proj/commit/{parent}"' in page
    assert "old.txt → new.txt" in page and "renamed 100%" in page
    assert '<td class="code">+<span class="c1"># more</span></td>' in page  # highlighted as Python
    root = text(get(f"/olga/proj/commit/{parent[:8]}"))
    assert "The long body\nof the first commit." in root and "root commit" in root
    assert root.count('<span class="badge status-added">added</span>') == 6


def test_big_diffs_are_cut_and_the_rest_is_reachable(repo, project, settings):
    sha = project.git("rev-parse", "v1")
    settings.DIFF_MAX_FILES = 2
    settings.DIFF_MAX_FILE_LINES = 2
    page = text(get(f"/olga/proj/commit/{sha}"))
    assert "More than 2 files changed" in page and f'href="/olga/proj/commit/{sha}?all=1"' in page
    everything = text(get(f"/olga/proj/commit/{sha}?all=1"))
    assert everything.count('class="difffile"') == 6
    # README.md and data.bin are shown (git's order); the README's 3 lines are cut at 2.
    assert f'href="/olga/proj/commit/{sha}?file=README.md">Show this file' in page
    one = text(get(f"/olga/proj/commit/{sha}?file=old.txt"))
    assert one.count('class="difffile"') == 1 and one.count('<tr class="add">') == 15


def test_compare_uses_the_merge_base(repo, project):
    page = text(get("/olga/proj/compare/main...feature/deep/x"))
    assert "feature work" in page and "pkg/feature.py" in page
    assert "main moves on" not in page and "main-only.txt" not in page  # three dots: not reverted
    short = text(get("/olga/proj/compare/feature/deep/x"))  # against the default branch
    assert "pkg/feature.py" in short
    result = compare.compare(repo, "main", "feature/deep/x")
    assert result.merge_base == project.git("merge-base", "main", "feature/deep/x")
    assert [c.subject for c in result.commits] == ["feature work"]
    assert [f.path for f in result.diff.files] == ["pkg/feature.py"]
    assert get("/olga/proj/compare/main...nope").status_code == 404


def test_compare_ids_is_compare_and_runs_no_git_again(repo, project, monkeypatch):
    base, head = project.git("rev-parse", "main"), project.git("rev-parse", "feature/deep/x")
    first = compare.compare_ids(repo, base, head)
    assert first == compare.compare(repo, base, head, with_diff=False)
    assert [c.subject for c in first.commits] == ["feature work"] and first.diff is None
    runs = []
    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: runs.append(a) or real(*a, **k))
    assert compare.compare_ids(repo, base, head) == first and runs == []
    # Anything but two full ids is resolved each time, as compare() does (through the
    # repository's long-lived cat-file, so no new process).
    asked: list = []
    resolve = catfile.resolve
    monkeypatch.setattr(catfile, "resolve", lambda *a, **k: asked.append(a) or resolve(*a, **k))
    assert compare.compare_ids(repo, base[:12], head) == first and asked
    assert compare.compare_ids(repo, base, "0" * 40) is None


def test_archives_stream_tar_gz_and_tar_zst(repo):
    gz = get("/olga/proj/archive/feature/deep/x.tar.gz")
    assert gz.status_code == 200 and gz["Content-Type"] == "application/gzip"
    assert gz["Content-Disposition"] == 'attachment; filename="proj-feature-deep-x.tar.gz"'
    with tarfile.open(fileobj=io.BytesIO(raw_bytes(gz)), mode="r:gz") as tar:
        assert "proj-feature-deep-x/pkg/feature.py" in tar.getnames()
    zst = get("/olga/proj/archive/v1.tar.zst")
    assert zst["Content-Type"] == "application/zstd"
    data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw_bytes(zst))).read()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        assert "proj-v1/old.txt" in tar.getnames() and "proj-v1/new.txt" not in tar.getnames()
    assert get("/olga/proj/archive/main.tar.bz2").status_code == 404


def test_repository_page_shows_files_readme_and_links(repo):
    page = text(get("/olga/proj"))
    assert 'href="/olga/proj/tree/main/pkg"' in page and "<h1>Proj</h1>" in page
    assert 'href="/olga/proj/commits"' in page and "/olga/proj/commit/" in page
    assert 'href="/olga/proj/archive/main.tar.zst"' in page


def test_empty_repository_history_leads_back_to_the_repository(tmp_path, git_home):
    from repos import services
    from tests.factories import UserFactory

    services.repository_create(owner=UserFactory(username="olga"), name="empty")
    response = get("/olga/empty/commits")
    assert response.status_code == 302 and response["Location"] == "/olga/empty"
    assert get("/olga/empty/tree/main").status_code == 404


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_pages_follow_a_real_push(world):
    owner = world.owner
    sha = owner.commit("pushed for browsing", name="src/hello.c")
    assert owner.push("main").returncode == 0
    tree = text(get("/owner/project/tree/main/src"))
    assert 'href="/owner/project/blob/main/src/hello.c"' in tree
    assert 'id="blob-lines"' in text(get("/owner/project/blob/main/src/hello.c"))
    assert raw_bytes(get("/owner/project/raw/main/src/hello.c")) == b"pushed for browsing\n"
    commit = text(get(f"/owner/project/commit/{sha}"))
    assert (
        '<td class="code">+<span class="n">pushed</span><span class="w"> </span><span class="k">for</span>'
        in commit
    )
    # Streamed by the real server (gunicorn), not just the test client.
    base = f"http://{world.host}/owner/project"
    with urllib.request.urlopen(f"{base}/archive/main.tar.zst", timeout=60) as response:
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(response.read())).read()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        assert "project-main/src/hello.c" in tar.getnames()
    with urllib.request.urlopen(f"{base}/raw/main/src/hello.c", timeout=60) as response:
        assert response.read() == b"pushed for browsing\n"
        assert "sandbox" in response.headers["Content-Security-Policy"]
