"""Subjects people follow or mute: "repository:<id>" here, "proposal:<id>" from reviews (named
in settings.NOTIFICATION_SUBJECTS: notifications may not import reviews). A resolver answers
what a subject is for one user, or None when it does not exist or the user may not see it:
a subscription form or API call about such a subject is a 404, as the page itself would be."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.urls import reverse
from django.utils.module_loading import import_string

from repos.models import Repository
from repos.selectors import can_read

SUBJECT = re.compile(r"^(repository|proposal):([1-9][0-9]{0,17})$")


@dataclass(frozen=True)
class SubjectInfo:
    subject: str
    repository: Repository
    title: str  # "#12 Fix the parser" (a proposal); "" for the repository itself
    url: str  # site-relative


Resolver = Callable[[int, object], "SubjectInfo | None"]


@functools.cache
def _resolver(path: str) -> Resolver:
    return import_string(path)


def parse(subject: object) -> tuple[str, int] | None:
    match = SUBJECT.match(str(subject or ""))
    return (match[1], int(match[2])) if match else None


def resolve(subject: object, user) -> SubjectInfo | None:
    """What `subject` is, if `user` (None: no check) may see it."""
    parsed = parse(subject)
    if parsed is None or parsed[0] not in settings.NOTIFICATION_SUBJECTS:
        return None
    return _resolver(settings.NOTIFICATION_SUBJECTS[parsed[0]])(parsed[1], user)


def repository_subject(repo: Repository) -> str:
    return f"repository:{repo.pk}"


def repository_info(pk: int, user) -> SubjectInfo | None:
    repo = Repository.objects.select_related("owner").filter(pk=pk, deleted_at__isnull=True).first()
    if repo is None or (user is not None and not can_read(user, repo)):
        return None
    url = reverse("repository", args=[repo.owner.username, repo.name])
    return SubjectInfo(repository_subject(repo), repo, "", url)
