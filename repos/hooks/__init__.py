"""git hooks installed into every repository (see repos.storage.install_hooks).

They are standalone scripts: they must never import Django or anything of the project,
because booting an application per push costs hundreds of milliseconds (GitHub cut
pre-receive from 880 ms to 10 ms median by not doing it). The web view decides who is
pushing and passes it in HOSTSITE_* environment variables.
"""
