"""What workspaces adds to every push: the rules for the pre-receive hook, per-push ref
hiding, and proc-receive for nameless pushes (registered in WorkspacesConfig.ready)."""

from __future__ import annotations

from repos.names import IMPORTED_REFS
from workspaces import browse, selectors


def hook_environment(repo, user, role: str, commands) -> dict[str, str]:
    env = selectors.rules_for(repo).to_env()
    if user is not None and any(
        set(old) == {"0"} and (ref.startswith(f"refs/users/{user.username}/") or ref.startswith("refs/for/"))
        for old, _new, ref in commands
    ):
        # The push creates refs in the pusher's workspace: count what is there now, here, so
        # the hook need not start git (and import subprocess) on the push's critical path.
        # A concurrent push by the same user can overshoot the limit by its own size at most.
        env["HOSTSITE_WORKSPACE_REF_COUNT"] = str(browse.count_user_refs(repo, user.username))
    return env


# Where cleanup keeps deleted workspace refs (workspaces.cleanup): never advertised, never
# pushable. Protocol v0 refuses wants no advertised ref reaches; git 2.39's v2 serves any object
# asked for by id, so archived (landed) work stays fetchable by someone who knows its id.
ARCHIVE = "refs/archive/"
# Where a take-down moves a workspace's refs (workspaces.moderation): hidden from everyone,
# staff included, in git; staff read the content through the web pages only.
TAKEDOWN = "refs/takedown/"


def _sees_hidden(user, role: str) -> bool:
    return role == "admin" or bool(user is not None and user.is_active and user.is_staff)


def _hidden_workspaces(repo, user, role: str) -> list[str]:
    """refs/users/<u>/ of the hidden and taken-down workspaces this user may not see."""
    if _sees_hidden(user, role):
        return []
    own = user.username if user is not None else None
    return [f"refs/users/{name}/" for name in selectors.invisible_usernames(repo) if name != own]


def git_config(repo, user, role: str, *, service: str, advertise: bool, refs):
    if service == "upload-pack":
        return [("uploadpack.hideRefs", value) for value in (ARCHIVE, TAKEDOWN, IMPORTED_REFS,
                                                             *_hidden_workspaces(repo, user, role))]
    if service != "receive-pack" or user is None:
        return []
    pairs = [
        # refs/for/* is handled by the proc-receive hook (nameless push).
        ("receive.procReceiveRefs", "refs/for/"),
        # While a push sits in quarantine, the repository is its "alternate", and the
        # connectivity check lists every alternate ref, hideRefs or not: 100k workspace refs
        # cost each push ~200 ms (bench/workspaces.py). Canonical refs and the pusher's own
        # workspace are the tips a push builds on; with fewer tips git walks a little further
        # at worst, and checks exactly as strictly.
        ("core.alternateRefsPrefixes", f"refs/heads/ refs/tags/ refs/users/{user.username}/"),
    ]
    if not selectors.may_edit_others(role, repo):
        # A push advertises the canonical refs and the pusher's own workspace only: with
        # 100k workspace refs the advertisement is 7.3 MB, hidden it is under 1 KB. Those who
        # may edit others' workspaces see them all, because git sends an update of a hidden
        # ref as a creation, which fails.
        own = f"refs/users/{user.username}/"
        if advertise:
            # The same refs, said as "hide everything but these": repos.advertisement then
            # lists them by prefix instead of receive-pack reading all 100k (~13 ms a push).
            # Other namespaces (refs/archive/; none is pushable by a contributor) are hidden too.
            pairs += [("receive.hideRefs", value) for value in ("refs/", "!refs/heads/", "!refs/tags/", f"!{own}")]
        else:
            # The push itself: git refuses updates to other users' workspaces as hidden refs,
            # and the pre-receive policy explains every other refusal.
            pairs += [("receive.hideRefs", "refs/users/"), ("receive.hideRefs", f"!{own}"),
                      ("receive.hideRefs", ARCHIVE), ("receive.hideRefs", TAKEDOWN),
                      ("receive.hideRefs", IMPORTED_REFS)]
    else:
        # Maintainers see every workspace but hidden and taken-down ones (admins see those).
        pairs += [("receive.hideRefs", value) for value in (ARCHIVE, TAKEDOWN, IMPORTED_REFS,
                                                            *_hidden_workspaces(repo, user, role))]
    return pairs


def commit_hidden(repo, user, sha: str) -> bool:
    """The commit page of content under legal hold or in a hidden workspace: a commit no ref
    this user may see contains answers 404 (staff see everything). Only repositories with
    taken-down refs or hidden workspaces pay for the check (`for-each-ref --contains`)."""
    from repos.git import run_git

    if user is not None and user.is_authenticated and user.is_active and user.is_staff:
        return False
    path = repo.disk_path
    hidden = _hidden_workspaces(repo, user, "admin" if _is_admin(user, repo) else "")
    if not hidden and not run_git(["for-each-ref", "--count=1", TAKEDOWN], repo=path).stdout:
        return False
    out = run_git(["for-each-ref", "--format=%(refname)", f"--contains={sha}", "refs/heads/", "refs/tags/",
                   "refs/users/", ARCHIVE], repo=path).text.split()
    return not any(ref for ref in out if not ref.startswith(tuple(hidden)))


def _is_admin(user, repo) -> bool:
    from repos.models import Role
    from repos.selectors import role_for

    return role_for(user, repo) == Role.ADMIN


def refused_wants(repo, user, role: str, read_wants) -> str | None:
    """A v2 fetch that asks by id for objects only taken-down refs or hidden workspaces (that
    this user may not see) reach is refused. Repositories without such refs pay one
    for-each-ref; the others a rev-list over the restricted content only (`--not` every
    other ref), which is small next to the history."""
    from repos.git import run_git

    restricted = [TAKEDOWN, *_hidden_workspaces(repo, user, role)]
    path = repo.disk_path
    tips = run_git(["for-each-ref", "--format=%(objectname)", *restricted], repo=path).text.split()
    if not tips:
        return None
    wants = set(read_wants())
    if not wants:
        return None
    excludes = [f"--exclude={prefix}*" for prefix in (*restricted, ARCHIVE)]
    out = run_git(["rev-list", "--objects", "--no-object-names", *sorted(set(tips)), "--not", *excludes, "--all"],
                  repo=path).text.split()
    if wants & set(out):
        return "git upload-pack: not our ref (the object is not available)"
    return None
