"""Git over SSH's settings (sshgit/), kept beside hostsite.settings, which imports them. Read
without Django too: `make run` (hostsite.run) decides from them whether to start sshd."""

from __future__ import annotations

import getpass
import os

from hostsite.env import env_bool, env_int, env_str

# What hostsite.settings takes from here: the settings, not the helpers.
__all__ = ["SSH_HOST", "SSH_LISTEN", "SSH_PORT", "SSH_PUBLIC_PORT", "SSH_SYSTEM_SSHD", "SSH_USER"]

# sshd's port; 0: no SSH at all (no sshd, no SSH clone URLs).
SSH_PORT = env_int("SSH_PORT", 2222, minimum=0, maximum=65535)
# The address sshd listens on; unset: the web server's HOST.
SSH_LISTEN = env_str("SSH_LISTEN", "") or env_str("HOST", "127.0.0.1")
# The system's own sshd serves git on port 22 through a `Match User git` block (docs/ssh.md):
# make run then starts the gateway and not an sshd of its own.
SSH_SYSTEM_SSHD = env_bool("SSH_SYSTEM_SSHD", False)
# The host name shown in SSH clone URLs; unset: the host of the page's own request.
SSH_HOST = env_str("SSH_HOST", "")
# The port shown in clone URLs when a proxy or NAT publishes sshd elsewhere (22 in production
# behind `Match User git`); unset: SSH_PORT.
SSH_PUBLIC_PORT = env_int("SSH_PUBLIC_PORT", 0, minimum=0, maximum=65535) or SSH_PORT


def _default_user() -> str:
    # sshd running as root logs people in as a dedicated account (created if missing);
    # unprivileged, it can only log in the account it runs as.
    return "git" if os.geteuid() == 0 else getpass.getuser()


# The account in `ssh://<SSH_USER>@host/owner/name.git`.
SSH_USER = env_str("SSH_USER", "") or _default_user()
