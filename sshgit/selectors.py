"""Reads about SSH keys: the key behind a login or a session, the lists pages show, and the
SSH clone URL.

`usable_key` runs for every SSH connection (sshd's AuthorizedKeysCommand, through the gateway)
and `session_key` for every command: one query each, on the fingerprint's unique index or the
primary key, with the owner joined, so that a banned user's or a deleted repository's key stops
working at once without a second look-up.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q, QuerySet

from repos.models import Repository
from sshgit.models import PublicKey

# A person's key while its user may sign in (a site ban deactivates the account); a deploy
# key while its repository is not deleted.
_USABLE = Q(user__isnull=False, user__is_active=True) | Q(
    repository__isnull=False, repository__deleted_at__isnull=True
)


def _usable() -> QuerySet[PublicKey]:
    return PublicKey.objects.select_related("user", "repository", "repository__owner", "created_by").filter(
        _USABLE
    )


def _one(qs: QuerySet[PublicKey]) -> PublicKey | None:
    # get(), not first(): first() would add an ORDER BY to a look-up by a unique column.
    try:
        return qs.get()
    except PublicKey.DoesNotExist:
        return None


def usable_key(fingerprint: str) -> PublicKey | None:
    """The key with this fingerprint ("SHA256:..."), if it may log in now; else None."""
    if not isinstance(fingerprint, str) or not fingerprint.startswith("SHA256:"):
        return None
    return _one(_usable().filter(fingerprint=fingerprint))


def session_key(key_id: int) -> PublicKey | None:
    """The key a session logged in with (`key-<id>` in the forced command), if it still may
    be used: checked again per command, so a ban takes effect on open connections' next one."""
    try:
        pk = int(key_id)
    except (TypeError, ValueError):
        return None
    if pk <= 0:
        return None
    return _one(_usable().filter(pk=pk))


def keys_of(user) -> QuerySet[PublicKey]:
    return PublicKey.objects.filter(user=user).order_by("created_at", "pk")


def deploy_keys_of(repo: Repository) -> QuerySet[PublicKey]:
    return PublicKey.objects.filter(repository=repo).select_related("created_by").order_by("created_at", "pk")


def ssh_enabled() -> bool:
    return bool(settings.SSH_PORT)


def _request_host(request) -> str:
    """The host the page was asked for, without its port; IPv6 addresses in brackets."""
    host = request.get_host()  # validated against ALLOWED_HOSTS
    if host.startswith("["):
        return host[: host.index("]") + 1]
    if host.count(":") == 1:
        return host.rsplit(":", 1)[0]
    if ":" in host:  # a bare IPv6 address (no port can be told apart): bracket it
        return f"[{host}]"
    return host


def ssh_host(request) -> str:
    host = settings.SSH_HOST or _request_host(request)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return host


def ssh_clone_url(request, repo: Repository) -> str | None:
    """The SSH URL to clone `repo`, or None when the site has no SSH. On port 22 the short scp
    form (`git@host:owner/name.git`) people know from other hosts; else ssh:// with the port."""
    if not ssh_enabled():
        return None
    return ssh_url_for(request, f"{repo.owner.username}/{repo.name}.git")


def ssh_url_for(request, path: str) -> str:
    """`path` (e.g. "owner/name.git") on this site's SSH server, in the form ssh_clone_url uses."""
    user, host, port = settings.SSH_USER, ssh_host(request), settings.SSH_PUBLIC_PORT
    if port == 22:
        return f"{user}@{host}:{path}"
    return f"ssh://{user}@{host}:{port}/{path}"


def ssh_test_command(request) -> list[str]:
    """The argv of `ssh -T` that checks a key against this site (shown on /help/ssh)."""
    port = settings.SSH_PUBLIC_PORT
    argv = ["ssh", "-T"]
    if port != 22:
        argv += ["-p", str(port)]
    return [*argv, f"{settings.SSH_USER}@{ssh_host(request).strip('[]')}"]
