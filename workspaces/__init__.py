"""Workspaces: ref-namespace policy, nameless push, review, cleanup, moderation, show-work.

Built in later issues; the app exists now so the layout and dependency direction are fixed
(workspaces uses repos; repos never imports workspaces).
"""
