"""What git's hooks run for a push.

pre-receive (the push policy, `pre_receive.handle`) is answered in the process serving the
push: the hook script git runs is gitcore/hookclient.py, which relays to that process over a
local socket (gitcore.hooksocket), so the decision is made where the user, their role and the
repository's rules already are, by the same policy every web write asks (`pushpolicy`).
post-receive (`post_receive.py`) stays a standalone script: it makes the push's record durable
on its own, whatever becomes of the web process (repos.push_spool). Booting an application per
hook would cost hundreds of milliseconds (GitHub cut pre-receive from 880 ms to 10 ms median by
not doing it); neither script imports Django or the project.
"""
