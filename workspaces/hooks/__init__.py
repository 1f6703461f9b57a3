"""Standalone hook scripts contributed by workspaces (installed by repos.storage)."""
