# Every ref namespace the platform owns, spelled once. Builders make ref names, predicates
# read them; no other module of the product spells these namespaces (tests/test_refspace_literals.py
# greps the tree). Standalone: no Django, no project imports, so the hooks import it too
# (installed beside them: repos.storage.HOOK_MODULES); the web process imports it as
# repos.hooks.refspace.
#
# The nameless layout. A contributor's branch push is mapped to refs/users/<me>/<branch>, and
# a ref cannot be both a file and a directory: nameless heads used to be named
# refs/users/<me>/<branch>/<hex>, so after `git push origin main` (refs/users/<me>/main) every
# `git push origin HEAD:refs/for/main` failed to lock, and the other order failed the same way.
# A nameless head is now ONE component under the workspace, <branch with '/' as '-'>-<12+ hex>
# [-<n>], and the server picks a name that is neither an existing ref nor the directory of one.
# A mapped branch name can then only meet a nameless head by naming it exactly (the same ref:
# judged as an update of it, never a lock error) or by naming a ref below it (`<head>/x`, which
# nobody types by accident; refused with a message that says so). Why not a namespace of its own
# (refs/nameless/<me>/...)? Workspaces are refs/users/<username>/<anything> by contract: fetch
# refspecs, hiding, visibility, quotas, exports and moderation all treat that prefix as the whole
# of someone's work. The branch a head was pushed for is not read back from the flattened name
# (release/1.x and release-1.x flatten alike): the database knows it (hostsite.for= push
# options, workspaces.nameless), and pages match the stem against the existing branches.
# Neither `re`, `collections.abc` nor `__future__` at import time: pre-receive and proc-receive
# import this module on every push, and only nameless pushes and pages parse names. Its import
# costs a hook about 0.4 ms, under 1% of hookgit's beside it (python -X importtime, same runs).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

# Git's own branches: workspaces' branch pushes map from them, nameless pushes target them.
HEADS = "refs/heads/"
WORKSPACES = "refs/users/"
FOR = "refs/for/"
# Hidden namespaces, never advertised nor pushable: deleted workspace refs kept restorable for
# the retention period, and refs moved out of sight by a moderator's take-down.
ARCHIVE = "refs/archive/"
TAKEDOWN = "refs/takedown/"
INTERNAL = (ARCHIVE, TAKEDOWN)
# `repo create --import --refs all` keeps a source's other namespaces (refs/pull/...) here.
IMPORTED = "refs/imported/"
# Clients applying a bundle only count a tag as complete when a branch points at it: each
# annotated tag gets an anchor branch in the bundle (bundles.packing).
BUNDLE_TAG_ANCHORS = "refs/heads/bundle-tags/"
# A replica's seed fetch lands here before its refs are swapped in (replication.sync).
REPLICA_SEED = "refs/replica-seed/"
# Scratch refs of the benchmarks (bench/), never in a hosted repository.
BENCH = "refs/bench/"

NAMELESS_SHORT = 12
# <stem>-<hex>[-<n>]: the commit the head was created at, abbreviated (longer when 12 digits
# are ambiguous), and a number when that name was taken.
_NAMELESS = r"^(?P<stem>.+)-(?P<hex>[0-9a-f]{12,64})(?:-(?P<n>[0-9]+))?$"
# The layout before one component per head: <branch>/<12 hex>. Only the migration reads it.
_LEGACY_NAMELESS = r"^refs/users/(?P<owner>[^/]+)/(?P<branch>.+)/(?P<hex>[0-9a-f]{12})$"


def branch_ref(name: str) -> str:
    return HEADS + name


def workspace_prefix(user: str) -> str:
    """refs/users/<user>/: the whole of one user's work on a repository (hiding, quotas,
    exports and moderation all act on it)."""
    return f"{WORKSPACES}{user}/"


def workspace_ref(user: str, name: str) -> str:
    return f"{WORKSPACES}{user}/{name}"


def is_workspace_ref(ref: str) -> bool:
    return ref.startswith(WORKSPACES)


def owner_of(ref: str) -> str | None:
    """The username a workspace ref belongs to, or None (not a workspace ref, or no name)."""
    if not is_workspace_ref(ref):
        return None
    owner, sep, rest = ref[len(WORKSPACES) :].partition("/")
    return owner if owner and sep and rest else None


def workspace_name(ref: str) -> str:
    """The part of a workspace ref after refs/users/<owner>/ ("" when it is not one)."""
    return ref[len(WORKSPACES) :].partition("/")[2] if is_workspace_ref(ref) else ""


def workspace_label(ref: str) -> str:
    """<owner>/<name>: how pages and URLs show a workspace ref."""
    return ref.removeprefix(WORKSPACES)


def for_ref(branch: str, topic: str = "") -> str:
    """The nameless push target: refs/for/<branch>[/<topic>]."""
    return f"{FOR}{branch}" + (f"/{topic}" if topic else "")


def for_target(ref: str) -> str:
    """refs/for/<branch>[/<topic>] -> <branch>[/<topic>] (branches may hold '/': the longest
    existing branch wins, see workspaces/hooks/nameless_push.split_target)."""
    return ref[len(FOR) :]


def archive_prefix(user: str) -> str:
    return f"{ARCHIVE}{user}/"


def nameless_stem(branch: str) -> str:
    """The branch as one ref component: '/' becomes '-' so the head sits directly in the
    workspace, beside (never below) the ref a branch push of that branch maps to."""
    return branch.replace("/", "-")


def nameless_ref(user: str, branch: str, short: str, n: int = 1) -> str:
    """refs/users/<user>/<stem>-<short>[-<n>]: the n-th candidate name of a nameless head of the
    commit abbreviated `short` pushed for `branch` (the hook takes the first that is free)."""
    return workspace_ref(user, f"{nameless_stem(branch)}-{short}" + (f"-{n}" if n > 1 else ""))


def nameless_parts(ref: str) -> tuple[str, str, str] | None:
    """(owner, stem, hex) of a ref shaped as a nameless head, or None. A plain push may use
    such a name too: whether nameless pushes wrote it is the database's to say."""
    owner = owner_of(ref)
    name = workspace_name(ref)
    if not owner or "/" in name:
        return None
    import re  # compiled patterns are cached by re after the first call

    match = re.match(_NAMELESS, name)
    return (owner, match["stem"], match["hex"]) if match else None


def is_nameless_for(ref: str, branch: str) -> bool:
    """Whether `ref` is shaped as a nameless head for `branch`."""
    parts = nameless_parts(ref)
    return parts is not None and parts[1] == nameless_stem(branch)


def nameless_branch(ref: str, branches: "Collection[str]") -> str | None:
    """The branch among `branches` a nameless-shaped `ref` was named for, or None. A branch
    spelled as the stem is preferred to one whose '/' flattened into it."""
    parts = nameless_parts(ref)
    if parts is None:
        return None
    stem = parts[1]
    if stem in branches:
        return stem
    return next((b for b in sorted(branches) if nameless_stem(b) == stem), None)


def name_conflicts(ref: str, existing: "Iterable[str]") -> bool:
    """Whether `ref` cannot be created beside `existing` refs: one of them is `ref`, lies below
    it (`ref` would be a directory) or above it (a file where `ref` needs a directory)."""
    below = ref + "/"
    return any(e == ref or e.startswith(below) or ref.startswith(e + "/") for e in existing)


def legacy_nameless(ref: str) -> tuple[str, str, str] | None:
    """(owner, branch, hex) of a head in the layout before one component (refs/users/<owner>/
    <branch>/<12 hex>), or None; the migration renames them (workspaces.refmigration)."""
    import re

    match = re.match(_LEGACY_NAMELESS, ref)
    return (match["owner"], match["branch"], match["hex"]) if match else None
