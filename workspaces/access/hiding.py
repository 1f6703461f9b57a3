"""Which refs a git request may see and reach: per-request hideRefs for fetches and pushes,
and the protocol v2 wants no hideRefs stops."""

from __future__ import annotations

from repos.names import IMPORTED_REFS
from repos.visibility import normalize_oid
from workspaces import selectors, visibility

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


WRITE_ROLES = ("maintainer", "admin")
# The namespaces a push advertisement shows (refs/users/: the pusher's own part), and refs/for/.
SHOWN_SPACES = frozenset({"heads", "tags", "users", "for"})


def maps_branches(repo, role: str) -> bool:
    """Whether this pusher's branch pushes go to their workspace (proc-receive): those who may
    not write branches, where the repository's setting is on."""
    return role not in WRITE_ROLES and selectors.workspace_settings(repo).branch_pushes_to_workspace


def push_hidden(repo, user, role: str) -> list[str]:
    """The receive.hideRefs values of a push (not its advertisement): git refuses updates of
    refs they hide, and the pre-receive policy explains every other refusal."""
    if selectors.may_edit_others(role, repo):
        # Others' workspaces, but hidden and taken-down ones (admins see those).
        return [ARCHIVE, TAKEDOWN, IMPORTED_REFS, *_hidden_workspaces(repo, user, role)]
    return ["refs/users/", f"!refs/users/{user.username}/", ARCHIVE, TAKEDOWN, IMPORTED_REFS]


def is_hidden(ref: str, values: list[str]) -> bool:
    """git's reading of hideRefs values: the last one that matches decides ("!" exposes)."""
    for value in reversed(values):
        negated = value.startswith("!")
        prefix = value[1:] if negated else value
        prefix = prefix.rstrip("/")
        if ref == prefix or ref.startswith(prefix + "/"):
            return not negated
    return False


def routed_refs(repo, user, role: str, commands, *, atomic: bool) -> list[str]:
    """The receive.procReceiveRefs of a push: the refs the proc-receive hook writes."""
    refs = [ref for _old, _new, ref in commands]
    hidden = push_hidden(repo, user, role)
    routed = ["refs/for/"]
    if maps_branches(repo, role):
        routed.append("refs/heads/")
    elif selectors.may_edit_others(role, repo):
        # Others' workspaces are hidden from every push advertisement, so git sends an update of
        # one as a creation: proc-receive judges it against the ref's tip. Only the workspaces
        # this push names, so a push to one's own refs never starts the hook.
        own = f"refs/users/{user.username}/"
        routed += sorted(
            {
                "refs/users/" + ref[len("refs/users/") :].partition("/")[0] + "/"
                for ref in refs
                if ref.startswith("refs/users/") and not ref.startswith(own) and not is_hidden(ref, hidden)
            }
        )
    if role == "admin":
        # Admins may delete refs of other namespaces (refs/pull/... of an import), which the
        # push advertisement no longer shows them: git sends old=0 for those, and the hook
        # deletes against the ref's tip, so the pushlog records what was deleted. Hidden
        # namespaces (refs/imported/, ...) stay git's to refuse.
        routed += sorted(
            {
                f"refs/{space}/"
                for ref in refs
                if (space := ref.split("/")[1] if ref.count("/") >= 2 else "") not in SHOWN_SPACES
                and space.replace("-", "").replace("_", "").replace(".", "").isalnum()
                and not is_hidden(f"refs/{space}/", hidden)
            }
        )
    if atomic and any(ref.startswith(tuple(routed)) or is_hidden(ref, hidden) for ref in refs):
        # receive-pack runs proc-receive before its own transaction, so the refs it writes and
        # the others would land apart (git 2.39 and 2.47); and it refuses hidden refs first and
        # goes on with the rest, atomic or not (2.39). The hook writes them all, in one
        # transaction (workspaces/hooks/proc_receive.py), or none.
        return ["refs/"]
    return routed


def git_config(
    repo, user, role: str, *, service: str, advertise: bool, commands=(), atomic: bool = False
) -> list[tuple[str, str]]:
    if service == "upload-pack":
        return [
            ("uploadpack.hideRefs", value)
            for value in (ARCHIVE, TAKEDOWN, IMPORTED_REFS, *_hidden_workspaces(repo, user, role))
        ]
    if service != "receive-pack" or user is None:
        return []
    own = f"refs/users/{user.username}/"
    pairs = [
        # While a push sits in quarantine, the repository is its "alternate", and the
        # connectivity check lists every alternate ref, hideRefs or not: 100k workspace refs
        # cost each push ~200 ms (bench/workspaces.py). Canonical refs and the pusher's own
        # workspace are the tips a push builds on; with fewer tips git walks a little further
        # at worst, and checks exactly as strictly.
        ("core.alternateRefsPrefixes", f"refs/heads/ refs/tags/ {own}"),
    ]
    if advertise:
        # Every pusher, maintainers and admins too, is shown the canonical refs and their own
        # workspace only: with 100k workspace refs the advertisement is 7.3 MB, this way under
        # 1 KB. Said as "hide everything but these", so repos.advertisement lists them by prefix
        # instead of receive-pack reading all 100k (~13 ms a push). Other namespaces
        # (refs/archive/; none is pushable by a contributor) are hidden too.
        pairs += [("receive.procReceiveRefs", "refs/for/")]
        return pairs + [
            ("receive.hideRefs", value) for value in ("refs/", "!refs/heads/", "!refs/tags/", f"!{own}")
        ]
    routed = routed_refs(repo, user, role, commands, atomic=atomic)
    pairs += [("receive.procReceiveRefs", ref) for ref in routed]
    if routed == ["refs/"]:
        # git refuses updates of hidden refs before proc-receive runs, and an atomic push goes on
        # without them: here the hook refuses them instead (HOSTSITE_PUSH_HIDDEN), so that the
        # whole push fails. Its connectivity check then reads every ref (atomic pushes only).
        return pairs
    hidden = push_hidden(repo, user, role)
    if selectors.may_edit_others(role, repo):
        # Others' workspaces hidden but for those this push names (routed to proc-receive):
        # receive-pack's connectivity check skips hidden refs, and 100k workspace tips cost a
        # maintainer's push ~40 ms (bench/branch_push.py). Moderated workspaces stay hidden.
        named = [f"!{prefix}" for prefix in routed if prefix.startswith("refs/users/")]
        hidden = ["refs/users/", f"!{own}", *named, *hidden]
    return pairs + [("receive.hideRefs", value) for value in hidden]


def push_aliases(repo, user, role: str) -> list[tuple[str, str]]:
    """For a pusher whose branch pushes go to their workspace, their workspace refs are shown
    to the push as branches too (repos.advertisement): git refuses to delete a ref it was not
    shown, and sends any ref it was not shown as a creation, so neither `git push origin
    :my-fix` nor a `--force` could otherwise reach refs/users/<me>/my-fix."""
    if user is None or not maps_branches(repo, role):
        return []
    return [("refs/heads/", f"refs/users/{user.username}/")]


def refused_wants(repo, user, role: str, read_wants) -> str | None:
    """Protocol v2 serves any object asked for by id (`want`, and `oid` in object-info),
    whatever hideRefs says: ids are normalised (git takes upper-case hex) and checked against
    what this viewer may see. Repositories with nothing moderated never parse the request."""
    view = visibility.view_for(repo, user)
    if not view.restricts:
        return None
    oids = {normalize_oid(want) for want in read_wants()}
    if None in oids or view.hidden_objects(oid for oid in oids if oid):
        return "git upload-pack: not our ref (the object is not available)"
    return None
