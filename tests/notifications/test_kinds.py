"""The one list of kinds (notifications.kinds) names every kind the code creates, so each has a
label on the settings page and a default delivery there."""

from __future__ import annotations

import re
from pathlib import Path

from notifications.kinds import BY_NAME, KINDS, default_delivery
from notifications.models import Delivery
from workspaces.models import ModerationAction

BASE_DIR = Path(__file__).resolve().parents[2]
APPS = ["repos", "workspaces", "bundles", "reviews", "showwork", "notifications", "sshgit"]
LITERAL_KIND = re.compile(r"""\bkind=["']([a-z_]+)["']""")
# reviews.events names kinds as values: `{pk: "review_requested"}`, `dict.fromkeys(ids, "comment")`.
EVENT_KIND = re.compile(r"""[:,=]\s*["']([a-z]+(?:_[a-z]+)*)["']""")


def test_every_kind_the_code_creates_is_listed():
    created: set[str] = set()
    for app in APPS:
        for path in (BASE_DIR / app).rglob("*.py"):
            text = path.read_text()
            created |= set(LITERAL_KIND.findall(text))
            if path.name == "events.py":
                created |= set(EVENT_KIND.findall(text))
    # Moderation notifies "workspace_<action>" for the flag-changing actions.
    created |= {
        f"workspace_{a}"
        for a in ("freeze", "unfreeze", "hide", "unhide", "take_down", "lift_take_down", "restore")
        if a in ModerationAction.values
    }
    assert {"proposal_opened", "review_requested", "mention", "merged", "conflict", "report"} <= created
    assert created - set(BY_NAME) == set()


def test_kinds_are_unique_with_valid_defaults():
    assert len(BY_NAME) == len(KINDS)
    assert all(k.default in Delivery.values and k.label for k in KINDS)
    assert default_delivery("something_new") == Delivery.WEB
