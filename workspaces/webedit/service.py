"""The web editor's service: commits made server-side, without a working tree.

A commit made on the web is a push made by other means: the ref moves by compare-and-swap
under the repository's lock, after the very policy the pre-receive hook runs has judged the
update (repos.gitaccess: workspaces, ref limits, bans, freezes, take-downs, protected
branches, mirrors), and it is recorded as a push (protocol "web"), so the pushlog, webhooks,
proposals (a new revision), cleanup and bundles follow it as they follow any push.

Where it lands: by default a ref in the editor's workspace, created from the commit the page
was loaded at (`base_commit`), so an edit made while the branch moved applies on the base it
was made on and the proposal shows whether it merges. On a ref the edit was made on (the
editor's own workspace ref, a proposal's ref in someone's workspace, or a branch for those
who may write it), the commit follows the ref's current tip, as long as the changed files
are still what the page showed (else Conflict, never a silent overwrite).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse

from gitcore.git import is_valid_refname
from gitcore.gittools import RefTransaction, ref_map, rev_parse, zero_like
from gitcore.oids import parse_for
from repos import gitaccess, objectcheck, selectors
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.gitaccess import GitRequest
from repos.gitprotocol import Pusher
from repos.hooks import refspace
from repos.hooks.refnames import invisible_reason, shown
from repos.hooks.updates import Update
from repos.locking import repository_lock
from repos.names import validate_commit_email, validate_commit_name
from repos.pushes import push_record
from repos.visibility import refuse_republishing
from workspaces.webedit import changes, files, paths, trees
from workspaces.webedit.types import Editable, EditRequest, EditResult

MAX_MESSAGE_BYTES = 64 * 1024
_HOSTNAME = re.compile(r"[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?")


def editable(repo, commit: str, path: str) -> Editable:
    """What the editor may show for `path` at `commit` (NotFound for an unknown commit)."""
    sha = _commit(repo, commit)
    try:
        raw = paths.check_path(path)
    except InvalidInput as exc:
        return Editable(path=path, blob=None, reasons=[exc.message])
    found, _decoded = files.describe(
        repo.disk_path, path, trees.entries_at(repo.disk_path, sha, [raw]).get(raw)
    )
    return found


def author_identity(user, host: str) -> tuple[str, str]:
    """(name, e-mail) for the commits `user` makes on the web: the profile's commit name and
    e-mail, else the username and username@users.noreply.<host> (the request's host, without
    its port). A stored value git would misread is ignored rather than trusted."""
    name = _valid((user.commit_name or "").strip(), validate_commit_name)
    email = _valid((user.commit_email or "").strip(), validate_email, validate_commit_email)
    return name or user.username, email or f"{user.username}@users.noreply.{_hostname(host)}"


def _valid(value: str, *validators) -> str:
    try:
        for validate in validators:
            if value:
                validate(value)
    except ValidationError:
        return ""
    return value


def _hostname(host: str) -> str:
    host = (host or "").strip().lower()
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host if _HOSTNAME.fullmatch(host) else "localhost"


def suggest_name(repo, user, kind: str, path: str) -> str:
    """A workspace ref name for an edit, from what it does to which file (`edit-readme`,
    `add-docs-intro`), made unique in the user's workspace with -2, -3..."""
    words = path.split("/")[-2:]
    if "." in words[-1].lstrip("."):
        words[-1] = words[-1].rsplit(".", 1)[0]  # README.md -> README
    ascii_words = unicodedata.normalize("NFKD", "-".join(words)).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_words).strip("-")[:40].strip("-") or "file"
    verb = kind if kind in changes.KINDS else "edit"
    prefix = refspace.workspace_prefix(user.username)
    taken = {ref[len(prefix) :] for ref in ref_map(repo.disk_path, prefix)}
    stem, n = f"{verb}-{slug}", 1
    name = stem
    # A name is taken if a ref has it, or lives below it (refs/users/u/x/y blocks x).
    while name in taken or any(t.startswith(name + "/") for t in taken):
        n += 1
        name = f"{stem}-{n}"
    return name


def clean_message(message: str) -> str:
    """The commit message: CR/LF and lone CR as LF, trailing blanks and blank edges dropped;
    InvalidInput when it is empty, too long, or holds a control character other than LF and
    TAB (a CR that is no line ending is read as one, never kept to forge lines)."""
    body = (message or "").replace("\r\n", "\n").replace("\r", "\n")
    bad = sorted(
        {f"U+{ord(c):04X}" for c in body if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F}
    )
    if bad:
        raise InvalidInput(
            f"The commit message contains control characters ({', '.join(bad[:5])}).",
            fields={"message": ["invalid"]},
        )
    body = "\n".join(line.rstrip() for line in body.strip().split("\n"))
    if not body:
        raise InvalidInput("A commit message is required.", fields={"message": ["required"]})
    if len(body.encode()) > MAX_MESSAGE_BYTES:
        raise InvalidInput("The commit message is too long.", fields={"message": ["too long"]})
    return body + "\n"


# --- committing --------------------------------------------------------------------------------


def _commit(repo, commit: str) -> str:
    """The full id of an existing commit; nothing else (no ref names, no abbreviations)."""
    sha = parse_for(repo.disk_path, (commit or "").strip())
    if sha is None or rev_parse(repo.disk_path, sha) != sha:
        raise NotFound("That commit does not exist in this repository.", fields={"base_commit": ["unknown"]})
    return sha


def _editor_role(repo, user) -> str:
    """The role label a push by `user` would have, or the refusal a push would get first."""
    if user is None or not user.is_authenticated:
        raise Forbidden("Sign in to edit files.", code="sign_in")
    if not selectors.can_read(user, repo):
        raise NotFound("Repository not found.")  # private repositories do not exist to outsiders
    if not user.is_active:
        raise Forbidden("This account is deactivated.")
    if repo.is_deleted:
        raise Forbidden("This repository is deleted; restore it before committing to it.")
    if selectors.active_import(repo) is not None:
        raise Forbidden("This repository is being imported; commit when the import has finished.")
    return Pusher(user, selectors.role_for(user, repo)).role_label


def _checked_ref(ref: str, what: str) -> str:
    if reason := invisible_reason(ref):
        raise InvalidInput(reason, fields={"name": ["invisible characters"]})
    if not is_valid_refname(ref):
        raise InvalidInput(f"{shown(ref)[:300]!r} is not a valid {what} name.", fields={"name": ["invalid"]})
    return ref


def _refs(req: EditRequest, username: str) -> tuple[str, str]:
    """(the full ref the page was on, the full ref the commit goes to)."""
    base_ref = req.base_ref.strip()
    base_ref = _checked_ref(base_ref if base_ref.startswith("refs/") else f"refs/heads/{base_ref}", "ref")
    if req.target == "branch":
        if not base_ref.startswith("refs/heads/"):
            raise InvalidInput(
                "Only a branch can be committed to directly: commit to your workspace instead."
            )
        return base_ref, base_ref
    if req.target != "workspace":
        raise InvalidInput(f"Unknown target {str(req.target)[:20]!r}.", fields={"target": ["invalid"]})
    name = req.name.strip()
    if not name:
        raise InvalidInput(
            "Name the ref of your workspace that gets this commit.", fields={"name": ["required"]}
        )
    ref = name if name.startswith("refs/") else refspace.workspace_ref(username, name)
    if not ref.startswith(refspace.WORKSPACES):
        raise InvalidInput(
            f"A workspace commit goes to a ref under {refspace.WORKSPACES}.", fields={"name": ["invalid"]}
        )
    return base_ref, _checked_ref(ref, "workspace ref")


def _value(repo, ref: str) -> str | None:
    """What a full ref points at, or None: the exact name (rev-parse would try refs/tags/...
    and others when it does not exist)."""
    return ref_map(repo.disk_path, ref).get(ref)


def _tip(repo, ref: str) -> str | None:
    """The commit a full ref points at, or None."""
    oid = _value(repo, ref)
    return rev_parse(repo.disk_path, oid) if oid else None


def _check_policy(repo, user, role: str, update: Update) -> None:
    """update-ref bypasses the hooks, so ask the policy the hooks run, as a push would."""
    req = GitRequest(
        repository=repo,
        user=user,
        role=role,
        service="receive-pack",
        commands=((update.old, update.new, update.ref),),
    )
    if reasons := gitaccess.check_updates(req, [update]):
        raise Forbidden(reasons[0], code="refused_by_policy")


def _check_objects(repo, new: str, parent: str) -> None:
    """The object checks a push of the same commit would meet (a `.gitmodules` whose URL is an
    option, say): a web edit is a push made by other means."""
    severities = objectcheck.severities(objectcheck.repository_overrides(repo))
    if refused := trees.refused_objects(repo.disk_path, new, parent, severities):
        found = objectcheck.parse(refused)
        why = "; ".join(objectcheck.explain(m) for m in found) or refused.strip().splitlines()[-1]
        raise InvalidInput(f"git's object checks refuse this change: {why}", code="object_check")


def _proposal_url(repo, ref: str, base_ref: str) -> str:
    target = (
        base_ref.removeprefix("refs/heads/") if base_ref.startswith("refs/heads/") else repo.default_branch
    )
    url = reverse("proposal-new", kwargs={"owner": repo.owner.username, "name": repo.name})
    return f"{url}?{urlencode({'ref': ref, 'target': target})}"


def _before_swap(repo, ref: str, old: str, new: str) -> None:
    """A seam between building the commit and moving the ref (tests move the ref here, as a
    push landing at that moment would: pushes do not take the repository's lock)."""


before_swap: Callable[..., None] = _before_swap


def commit_changes(req: EditRequest) -> EditResult:
    """Commit the changes and move the target ref, recorded as a push; see the module's doc."""
    repo, user = req.repository, req.user
    role = _editor_role(repo, user)
    message = clean_message(req.message)
    checked = changes.check_request(req.changes)
    base = _commit(repo, req.base_commit)
    base_ref, ref = _refs(req, user.username)
    name, email = author_identity(user, req.host)
    path = repo.disk_path
    with repository_lock(repo.pk, purpose=f"web edit by {user.username}", timeout=30):
        current = _value(repo, ref)
        on_ref = ref == base_ref
        if on_ref and current is None:
            raise Conflict(
                f"{shown(ref)} no longer exists: it was deleted since you loaded the page.", code="gone"
            )
        if not on_ref and current is not None:
            free = suggest_name(repo, user, req.changes[0].kind, req.changes[0].path)
            raise Conflict(
                f"{shown(ref)} already exists: choose another name (for instance {free}), or edit on it.",
                code="ref_exists",
                fields={"name": ["exists"]},
            )
        parent = (rev_parse(path, current) if current else None) if on_ref else base
        if parent is None:
            raise Conflict(
                f"{shown(ref)} does not point at a commit: it cannot be edited here.", code="not_commit"
            )
        tip = parent if on_ref else (_tip(repo, base_ref) or base)
        planned = changes.plan(path, checked, base=base, tip=tip, parent=parent)
        parent_tree = trees.tree_of(path, parent)
        tree = trees.rewrite(path, parent_tree, planned)
        if tree == parent_tree:
            raise InvalidInput("Nothing to commit: the files are as they were.", code="no_changes")
        new = trees.commit_tree(path, tree, parent, message, name=name, email=email)
        refuse_republishing(repo, user, [new])
        _check_objects(repo, new, parent)
        old = current or zero_like(new)
        update = Update(old, new, ref)
        _check_policy(repo, user, role, update)
        before_swap(repo, ref, old, new)
        if not RefTransaction(path).update(ref, new, old=old).try_commit():
            if _value(repo, ref) != current:
                raise Conflict(f"{shown(ref)} moved while committing (a push landed): reload and try again.")
            raise InvalidInput(f"{shown(ref)} cannot be created: another ref's name is in the way.")
        with transaction.atomic():
            push = push_record(repo=repo, pusher=user, updates=[update], protocol="web")
    return EditResult(
        ref=ref,
        commit=new,
        created=current is None,
        push_id=push.pk if push else None,
        proposal_url=None if req.target == "branch" else _proposal_url(repo, ref, base_ref),
    )
