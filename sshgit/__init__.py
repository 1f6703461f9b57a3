"""Git over SSH through OpenSSH: people's and deploy keys (models, pages, API), the standalone
programs sshd runs (the AuthorizedKeysCommand and the forced command), the gateway that serves
their sessions with Django loaded, and the transport that serves git there under the same
access contract as smart HTTP (repos.gitaccess)."""
