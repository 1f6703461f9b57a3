"""The primary's internal routes (replication.internal). "_replication" can never be a user
name (names start with a letter or digit), so no repository's URL can be taken by them."""

from django.urls import path

from replication import internal

urlpatterns = [
    path("_replication/<int:repo_id>.git/info/refs", internal.info_refs, name="replication-info-refs"),
    path(
        "_replication/<int:repo_id>.git/git-upload-pack", internal.upload_pack, name="replication-upload-pack"
    ),
]
