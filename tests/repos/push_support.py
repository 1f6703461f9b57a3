"""What the push-recording tests share: the session's spool directory, emptied around each
test, and the pushes a repository has."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings

from repos.models import Push

ZERO = "0" * 40


@pytest.fixture
def spool():
    """The session's spool directory, empty before and after each test."""
    directory = Path(settings.PUSH_SPOOL_DIR)
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)


def spooled_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


def pushes_of(world) -> list[Push]:
    return list(Push.objects.filter(repository=world.repo).order_by("pk"))
