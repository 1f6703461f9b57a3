"""Which refs a git request may see and write: per-request hideRefs for fetches and pushes,
and which refs a push routes through proc-receive. What the viewer may not see comes from the
visibility component's git face (workspaces.visibility.gitface); this module says how a push
uses it."""

from __future__ import annotations

from gitcore.hiderefs import is_hidden
from repos.hooks import refspace
from repos.hooks.pushpolicy import WRITE_ROLES
from repos.names import IMPORTED_REFS
from workspaces import selectors
from workspaces.visibility import gitface
from workspaces.visibility.rule import ARCHIVE, TAKEDOWN

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
        # Others' workspaces, but those hidden from this pusher.
        return [ARCHIVE, TAKEDOWN, IMPORTED_REFS, *gitface.hidden_workspace_prefixes(repo, user, role)]
    return [
        refspace.WORKSPACES,
        f"!{refspace.workspace_prefix(user.username)}",
        ARCHIVE,
        TAKEDOWN,
        IMPORTED_REFS,
    ]


def routed_refs(repo, user, role: str, commands, *, atomic: bool) -> list[str]:
    """The receive.procReceiveRefs of a push: the refs the proc-receive hook writes."""
    refs = [ref for _old, _new, ref in commands]
    hidden = push_hidden(repo, user, role)
    routed = [refspace.FOR]
    if maps_branches(repo, role):
        routed.append("refs/heads/")
    elif selectors.may_edit_others(role, repo):
        # Others' workspaces are hidden from every push advertisement, so git sends an update of
        # one as a creation: proc-receive judges it against the ref's tip. Only the workspaces
        # this push names, so a push to one's own refs never starts the hook.
        own = refspace.workspace_prefix(user.username)
        routed += sorted(
            {
                refspace.WORKSPACES + ref[len(refspace.WORKSPACES) :].partition("/")[0] + "/"
                for ref in refs
                if ref.startswith(refspace.WORKSPACES)
                and not ref.startswith(own)
                and not is_hidden(ref, hidden)
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
        return [("uploadpack.hideRefs", value) for value in gitface.upload_hide_values(repo, user, role)]
    if service != "receive-pack" or user is None:
        return []
    own = refspace.workspace_prefix(user.username)
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
        # 1 KB. Said as "hide everything but these", so gitcore.advertisement lists them by prefix
        # instead of receive-pack reading all 100k (~13 ms a push). Other namespaces
        # (refs/archive/; none is pushable by a contributor) are hidden too.
        pairs += [("receive.procReceiveRefs", refspace.FOR)]
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
        named = [f"!{prefix}" for prefix in routed if prefix.startswith(refspace.WORKSPACES)]
        hidden = [refspace.WORKSPACES, f"!{own}", *named, *hidden]
    return pairs + [("receive.hideRefs", value) for value in hidden]


def push_aliases(repo, user, role: str) -> list[tuple[str, str]]:
    """For a pusher whose branch pushes go to their workspace, their workspace refs are shown
    to the push as branches too (gitcore.advertisement): git refuses to delete a ref it was not
    shown, and sends any ref it was not shown as a creation, so neither `git push origin
    :my-fix` nor a `--force` could otherwise reach refs/users/<me>/my-fix."""
    if user is None or not maps_branches(repo, role):
        return []
    return [("refs/heads/", refspace.workspace_prefix(user.username))]
