"""`.zip` source archives: a real zip of the tree as git has it (names that are not UTF-8,
symlinks, executables, nested directories), under the same prefix as the tarballs, streamed."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import zipfile

import pytest
from django.test import Client

from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

LATIN1_NAME = b"caf\xe9.txt"  # ISO-8859-1, not valid UTF-8


@pytest.fixture
def repo(tmp_path, git_home):
    work = Work(tmp_path / "work", git_home)
    work.commit(
        "first",
        {
            "README.md": "# zipped\n",
            "src/deep/nested/mod.py": "X = 1\n",
            "naïve.txt": "utf-8 name\n",
            "data.bin": bytes(range(256)) * 64,
            "empty.txt": "",
        },
    )
    (work.path / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (work.path / "run.sh").chmod(0o755)
    os.symlink("src/deep/nested/mod.py", work.path / "link-to-mod")
    os.symlink("../nowhere", work.path / "dangling")
    (work.path / os.fsdecode(LATIN1_NAME)).write_bytes(b"latin-1 name\n")
    work.git("add", "--", "run.sh", "link-to-mod", "dangling", os.fsdecode(LATIN1_NAME))
    work.commit("second")
    return work.publish()


def tree_files(repo) -> dict[bytes, tuple[str, bytes]]:
    """path -> (mode, content) of every blob at main, straight from git."""
    out = subprocess.run(
        ["git", "-C", str(repo.disk_path), "ls-tree", "-r", "-z", "main"], capture_output=True, check=True
    ).stdout
    files = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, _kind, sha = meta.decode().split()
        blob = subprocess.run(
            ["git", "-C", str(repo.disk_path), "cat-file", "blob", sha], capture_output=True, check=True
        ).stdout
        files[path] = (mode, blob)
    return files


def zip_name(info: zipfile.ZipInfo) -> bytes:
    """The name as stored: zipfile decodes names without the UTF-8 flag as cp437."""
    return info.filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")


def fetch_zip(path: str) -> tuple[object, zipfile.ZipFile]:
    response = Client().get(path)
    assert response.status_code == 200, response.content[:300]
    assert response.streaming  # never built whole in memory
    body = b"".join(response.streaming_content)
    return response, zipfile.ZipFile(io.BytesIO(body))


def test_zip_holds_the_tree_byte_for_byte(repo):
    response, archive = fetch_zip("/olga/proj/archive/main.zip")
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="proj-main.zip"'
    assert archive.testzip() is None  # every member's CRC checks out
    members = {zip_name(info): info for info in archive.infolist() if not info.is_dir()}
    expected = tree_files(repo)
    assert set(members) == {b"proj-main/" + path for path in expected}
    for path, (mode, content) in expected.items():
        info = members[b"proj-main/" + path]
        unix_mode = info.external_attr >> 16
        if mode == "120000":
            assert stat.S_ISLNK(unix_mode), path  # a symlink stays a link; its target is the body
        elif mode == "100755":
            assert unix_mode & 0o111, path
        assert archive.read(info) == content, path


def test_zip_names_that_are_not_utf8_are_kept_as_bytes(repo):
    _response, archive = fetch_zip("/olga/proj/archive/main.zip")
    by_name = {zip_name(info): info for info in archive.infolist()}
    latin = by_name[b"proj-main/" + LATIN1_NAME]
    assert not latin.flag_bits & 0x800  # not claimed to be UTF-8
    assert archive.read(latin) == b"latin-1 name\n"
    utf8 = by_name["proj-main/naïve.txt".encode()]
    assert utf8.flag_bits & 0x800 and archive.read(utf8) == b"utf-8 name\n"
    links = {
        name: archive.read(info) for name, info in by_name.items() if stat.S_ISLNK(info.external_attr >> 16)
    }
    assert links == {
        b"proj-main/link-to-mod": b"src/deep/nested/mod.py",
        b"proj-main/dangling": b"../nowhere",
    }


def test_zip_of_a_tag_and_of_a_commit_id_use_the_tarballs_prefix(repo):
    sha = subprocess.run(
        ["git", "-C", str(repo.disk_path), "rev-parse", "main~1"], capture_output=True, text=True, check=True
    ).stdout.strip()
    response, archive = fetch_zip(f"/olga/proj/archive/{sha}.zip")
    prefix = f"proj-{sha[:12]}/"
    assert response["Content-Disposition"] == f'attachment; filename="proj-{sha[:12]}.zip"'
    assert {info.filename for info in archive.infolist() if not info.is_dir()} == {
        prefix + name
        for name in ("README.md", "src/deep/nested/mod.py", "naïve.txt", "data.bin", "empty.txt")
    }
    assert Client().get("/olga/proj/archive/nope.zip").status_code == 404
    assert Client().get("/olga/proj/archive/main.tar.bz2").status_code == 404


def test_archive_links_offer_zip(repo):
    page = Client().get("/olga/proj").content.decode()
    assert 'href="/olga/proj/archive/main.zip"' in page
    tree = Client().get("/olga/proj/tree/main/src").content.decode()
    assert 'href="/olga/proj/archive/main.zip"' in tree
