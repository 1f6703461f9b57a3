"""Reviews' git access backend (repos.gitaccess), named in settings.GIT_ACCESS_BACKENDS as
reviews.access.ReviewAccess: post-receive tells a `refs/for` pusher where their proposal is."""

from __future__ import annotations

from repos.gitaccess import BaseGitAccess, GitRequest


class ReviewAccess(BaseGitAccess):
    def hook_env(self, req: GitRequest) -> dict[str, str]:
        """What post-receive prints to a push that carried options (git shows it as `remote:`)."""
        if not any(ref.startswith("refs/for/") for _old, _new, ref in req.commands):
            return {}
        repo = req.repository
        return {
            "HOSTSITE_PUSH_OPTIONS_NOTICE": (
                f"proposals opened with -o title=... are listed at /{repo.owner.username}/{repo.name}/proposals"
            )
        }
