"""Asking for a web or API import, seeing it, cancelling it (sources.import_runs runs it).

The request creates the repository (empty) and a RepositoryImport row at once, so the user
lands on the repository page and watches the import there, like GitHub's importer; the Celery
task is queued when the request's transaction commits. Everything that can be checked without
fetching is checked first, and bad input creates nothing. Credentials cross the broker sealed
(repos.sealing) and are never written anywhere. A failed or cancelled import removes the
repository, row and directory; the import's row keeps the name, the state and why.
"""

from __future__ import annotations

import os
import shutil
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from repos import enqueue, netguard, sealing, selectors, services, storage
from repos.errors import Conflict, Forbidden, InvalidInput
from repos.models import ImportState, RefsMode, Repository, RepositoryImport, User, Visibility

SEAL_PURPOSE = "import-credentials"
# A running import writes a heartbeat at least every few seconds while git runs; the longest
# silent step is listing the refs (LIST_TIMEOUT) after the probe (6 x 20 s). A row whose
# heartbeat is older than this lost its worker, and a redelivered task starts it again.
STALE_AFTER = timedelta(minutes=5)
# Username for a token given without one: GitHub, GitLab and Gitea accept any non-empty name.
DEFAULT_SOURCE_USER = "git"


def _credentials(username: str, password: str) -> netguard.Credentials | None:
    username, password = (username or "").strip(), password or ""
    if not username and not password:
        return None
    if (
        len(username) > 200
        or len(password) > 1000
        or ":" in username
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in username + password)
    ):
        raise InvalidInput(
            "The source's username or password is not valid.",
            fields={"import_username": ["invalid"], "import_password": ["invalid"]},
        )
    return netguard.Credentials(username or DEFAULT_SOURCE_USER, password)


def import_request(
    *,
    requester: User,
    name: str,
    source: str,
    username: str = "",
    password: str = "",
    refs_mode: str = RefsMode.DEFAULT,
    mirror: bool = False,
    description: str = "",
    visibility: str = Visibility.PUBLIC,
) -> RepositoryImport:
    """Create `requester/name` empty, with a queued import of `source`; the task runs on commit.

    Everything that can be checked without fetching is checked here, before anything exists:
    the name, the URL's scheme and addresses, who may ask for all refs."""
    services.repository_check(owner=requester, name=name, description=description, visibility=visibility)
    if refs_mode not in RefsMode.values:
        raise InvalidInput("refs is 'default' or 'all'.", fields={"refs": ["invalid"]})
    if refs_mode == RefsMode.ALL and not requester.is_staff:
        raise Forbidden(
            "Only site staff can import all refs; the default takes HEAD, branches and tags.",
            fields={"refs": ["staff_only"]},
        )
    credentials = _credentials(username, password)
    _, in_url = netguard.split_credentials((source or "").strip()) if "://" in (source or "") else ("", None)
    if mirror and (credentials or in_url):
        raise InvalidInput(
            "A pull mirror fetches again every few minutes, and credentials are never "
            "stored: mirror a public URL, or import without mirroring.",
            fields={"mirror": ["credentials"]},
        )
    checked = netguard.prepare(
        source,
        staff=requester.is_staff,
        credentials=credentials,
        probe=False,
        allow_private=settings.IMPORT_ALLOW_PRIVATE_SOURCES,
    )
    credentials = credentials or in_url
    repo = None
    try:
        with transaction.atomic():
            repo = services.repository_create(
                owner=requester, name=name, description=description, visibility=visibility
            )
            imp = RepositoryImport.objects.create(
                repository=repo,
                full_name=repo.full_name,
                requested_by=requester,
                source_url=checked.display_url,
                refs_mode=refs_mode,
                mirror=mirror,
            )
            sealed = None
            if credentials is not None:
                sealed = sealing.seal(
                    {"u": credentials.username, "p": credentials.secret}, purpose=SEAL_PURPOSE
                )
            enqueue.after_commit("repos.tasks.run_import", imp.pk, sealed)
    except BaseException:
        # The row rolled back; the directory repository_create made must follow it.
        if repo is not None and repo.pk and not Repository.objects.filter(pk=repo.pk).exists():
            storage.remove_repository_from_disk(repo.disk_path)
        raise
    return imp


# --- reads -------------------------------------------------------------------------------------


def import_for(user, import_id: int) -> RepositoryImport | None:
    """The import if `user` may see it: who asked for it, staff, and the repository's admins."""
    imp = (
        RepositoryImport.objects.select_related("repository__owner", "requested_by")
        .filter(pk=import_id)
        .first()
    )
    if imp is None or user is None or not user.is_authenticated or not user.is_active:
        return None
    if user.is_staff or imp.requested_by_id == user.pk:
        return imp
    if imp.repository is not None and selectors.can_admin(user, imp.repository):
        return imp
    return None


# --- cancel ------------------------------------------------------------------------------------


def import_cancel(*, imp: RepositoryImport, actor: User) -> RepositoryImport:
    """Cancel an import the actor may see. A queued one (or one whose worker died) is
    cancelled here; a running one is flagged and its task stops git within about a second."""
    now = timezone.now()
    message = f"Cancelled by {actor.username}."
    idle = Q(state=ImportState.QUEUED) | Q(state=ImportState.RUNNING, heartbeat_at__lt=now - STALE_AFTER)
    repo_id = imp.repository_id
    ended_here = _remove_repository(
        repo_id,
        mark=lambda: RepositoryImport.objects.filter(idle, pk=imp.pk).update(
            state=ImportState.CANCELLED, message=message, finished_at=now, cancel_requested=True
        ),
    )
    if not ended_here and not RepositoryImport.objects.filter(pk=imp.pk, state=ImportState.RUNNING).update(
        cancel_requested=True, message=message
    ):
        imp.refresh_from_db()
        raise Conflict(f"This import has already finished ({imp.state}).", code="import_finished")
    imp.refresh_from_db()
    return imp


def _remove_repository(repo_id: int | None, *, mark=None) -> bool:
    """A failed or cancelled import leaves nothing: the repository's row (its import keeps
    full_name, state and the reason) and its directory. `mark` (the import's conditional state
    change) runs in the same transaction; if it matches nothing, nothing is removed. The
    directory is renamed away inside the transaction, so once the import reads as ended its
    repository is gone from disk too."""
    trashed = None
    path = storage.repository_path(repo_id) if repo_id else None
    try:
        with transaction.atomic():
            if mark is not None and not mark():
                return False
            if repo_id is None or path is None:
                return True
            RepositoryImport.objects.filter(repository_id=repo_id).update(repository=None)
            Repository.objects.filter(pk=repo_id).delete()
            if path.exists():
                trashed = path.with_name(f".trash-{path.name}-{time.time_ns()}")
                os.rename(path, trashed)
    except BaseException:
        if trashed is not None and not path.exists():  # type: ignore[union-attr]  # trashed implies a path
            os.rename(trashed, path)  # type: ignore[arg-type]
        raise
    if trashed is not None:
        shutil.rmtree(trashed, ignore_errors=True)
    return True
