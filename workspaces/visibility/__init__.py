"""The visibility component: one rule for what taken-down and hidden workspaces take out of a
repository, asked by every exit, with two faces and the rule against publishing again.

- rule.py: who sees what, from the database (a viewer's hidden ref prefixes).
- view.py and closure.py, the content face: the View of repos.visibility's contract (pages,
  API, pushlog, search, Work) and the objects only hidden refs reach.
- gitface.py, the git face: hideRefs for a request, and which ids a fetch names that the viewer
  may not see (repos.fetchscreen answers for those as for unknown ids).
- republish.py: what may not be published again (a take-down's commits, staff's blocked
  content), for pushes (the pre-receive hook's environment) and web writes, walked by
  repos/hooks/contentguard.py.
"""

from workspaces.visibility.republish import blocks_republishing, hook_environment
from workspaces.visibility.rule import ARCHIVE, TAKEDOWN, hidden_prefixes
from workspaces.visibility.view import ModeratedView, view_for

__all__ = [
    "ARCHIVE",
    "TAKEDOWN",
    "ModeratedView",
    "blocks_republishing",
    "hidden_prefixes",
    "hook_environment",
    "view_for",
]
