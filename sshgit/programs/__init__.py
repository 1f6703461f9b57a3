"""The two programs sshd runs (AuthorizedKeysCommand and the forced command): stdlib only and
never Django, started as `python3 -I -S` in ~10 ms. sshgit.sshd copies them into a root-owned
runtime directory, where they find the gateway's socket next to themselves."""
