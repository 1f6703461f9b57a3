"""SSH public keys: a person's (`user` set) or a repository's deploy key (`repository` set).

One table for both, so that the fingerprint's uniqueness holds site-wide in the database itself
and the AuthorizedKeysCommand finds any key with one indexed look-up.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class PublicKey(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="ssh_keys"
    )
    repository = models.ForeignKey(
        "repos.Repository", null=True, blank=True, on_delete=models.CASCADE, related_name="deploy_keys"
    )
    # Who added it: the user for their own key, the admin for a deploy key (pushes made with a
    # deploy key are recorded under this account).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    title = models.CharField(max_length=100)
    key_type = models.CharField(max_length=64)  # "ssh-ed25519", "sk-ssh-ed25519@openssh.com", ...
    key_data = models.TextField()  # the base64 wire blob, as in an authorized_keys line
    fingerprint = models.CharField(max_length=80, unique=True)  # "SHA256:" + unpadded base64
    bits = models.PositiveIntegerField(default=0)
    read_write = models.BooleanField(default=False)  # deploy keys only: may push
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, repository__isnull=True)
                | Q(user__isnull=True, repository__isnull=False),
                name="sshgit_key_has_one_owner",
            )
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.fingerprint})"

    @property
    def is_deploy_key(self) -> bool:
        return self.repository_id is not None
