"""The hooks that decide, served by a benchmark's own process as the platform's serves them: a
push registered on this process's hook socket (gitcore.hooksocket) with the environment the
pipeline would give it, so the installed pre-receive (the relay client) is timed end to end:
the client's start, the exchange, and the policy answering in a warm process."""

from __future__ import annotations

from pathlib import Path

from gitcore import hooksocket
from repos.hooks import pre_receive


def served(env: dict[str, str]) -> dict[str, str]:
    """`env` plus the variables that reach a push registered for it (repository: its GIT_DIR).
    The registration lasts as long as this process: a benchmark's runs all use it."""
    return {**env, **hooksocket.register(Path(env["GIT_DIR"]), env, {"pre-receive": pre_receive.handle})}
