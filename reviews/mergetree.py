"""Merging without a working tree: git plumbing that builds objects only.

`git merge-tree --write-tree` computes a merged tree (ort, with rename detection) and
`git commit-tree` writes the commit; reviews.merge chooses what to merge and moves the branch.

Rebase needs a three-way merge with a chosen base (commit C replayed onto T has base C^),
which `merge-tree --merge-base` gives only from git 2.40. On older git (2.38, 2.39) we give
merge-tree two scaffolding commits, tree(T) and tree(C), each with the single parent C^: their
only merge base is C^, so merge-tree's own base computation picks exactly the base we want and
the merge keeps ort's rename handling. The scaffolding commits are unreachable objects (kept in
the cruft pack like any other) and never reach a ref. Not chosen: a temporary index with
`read-tree -m` + `merge-index git-merge-one-file`, which needs a working tree for file merges
and detects no renames.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gitcore.git import GitError, git_version, run_git
from repos.errors import Conflict

_CONTROL = re.compile(r"[\x00-\x1f\x7f<>]")


class MergeConflict(Conflict):
    code = "merge_conflict"

    def __init__(self, message: str, files: list[str]):
        super().__init__(message, fields={"files": files})
        self.files = files


@dataclass(frozen=True)
class Identity:
    name: str
    email: str
    date: str = ""  # "@<unix seconds> <+hhmm>"; empty: now


def identity_of(user) -> Identity:
    """The user as a git identity: display name (or username) and email, stripped of what git
    would refuse or misparse in an ident line."""
    name = _CONTROL.sub("", (user.display_name or user.get_full_name() or user.username)).strip()[:100]
    email = _CONTROL.sub("", user.email or "").strip()[:200] or f"{user.username}@users.noreply.hostsite"
    return Identity(name or user.username, email)


def _ident_env(author: Identity, committer: Identity) -> dict[str, str]:
    env = {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_COMMITTER_NAME": committer.name,
        "GIT_COMMITTER_EMAIL": committer.email,
    }
    if author.date:
        env["GIT_AUTHOR_DATE"] = author.date
    return env


def tree_of(path: Path, commit: str) -> str:
    return run_git(["rev-parse", f"{commit}^{{tree}}"], repo=path).text.strip()


def commit_tree(
    path: Path, tree: str, parents: list[str], message: bytes, *, author: Identity, committer: Identity
) -> str:
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return run_git(args, repo=path, input=message, env=_ident_env(author, committer)).text.strip()


def _merge_tree(path: Path, args: list[str], what: str) -> str:
    """`git merge-tree --write-tree`: the merged tree, or MergeConflict naming the files."""
    result = run_git(
        ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", *args], repo=path, check=False
    )
    if result.returncode not in (0, 1):
        if b"unrelated histories" in result.stderr:
            raise Conflict(f"{what}: the histories have nothing in common.", code="unrelated_histories")
        raise GitError(["merge-tree", *args], result.returncode, result.stderr)
    fields = result.stdout.decode("utf-8", "replace").split("\0")
    tree = fields[0].strip()
    if result.returncode == 0:
        return tree
    files: list[str] = []
    for name in fields[1:]:
        if not name:
            break
        if name not in files:
            files.append(name)
    raise MergeConflict(f"{what} conflicts in {len(files)} file(s): {', '.join(files[:20])}", files)


def merge_trees(path: Path, ours: str, theirs: str, what: str) -> str:
    """Merge two commits, merge-tree finding their merge base(s) itself (git 2.38 form)."""
    return _merge_tree(path, [ours, theirs], what)


def three_way(path: Path, base: str, ours: str, theirs: str, what: str) -> str:
    """The tree of merging `theirs` into `ours` with `base` as the merge base (a cherry-pick
    when base is theirs' parent). See the module docstring for git < 2.40."""
    if base == ours:
        return tree_of(path, theirs)
    if git_version() >= (2, 40, 0):
        return _merge_tree(path, [f"--merge-base={base}", ours, theirs], what)
    scaffold = Identity("hostsite", "hostsite@localhost", "@0 +0000")
    message = b"hostsite merge scaffolding\n"
    side_a = commit_tree(path, tree_of(path, ours), [base], message, author=scaffold, committer=scaffold)
    side_b = commit_tree(path, tree_of(path, theirs), [base], message, author=scaffold, committer=scaffold)
    return _merge_tree(path, [side_a, side_b], what)


def subject(path: Path, commit: str) -> str:
    return run_git(["log", "-1", "--format=%s", commit, "--"], repo=path).text.strip()


def replay(path: Path, commit: str, tree: str, parent: str, committer: Identity) -> str:
    """`commit` again, as `tree` on `parent`: its author line, encoding and message byte for
    byte, the merging user as committer. Copied, not re-parsed: histories from old tools carry
    author lines git accepts but will not write again (a bad time zone, no email: docs/object-checks.md),
    and commit-tree would refuse them. Written with --literally because git 2.42+ hash-object
    holds new objects to strict checks; nothing here is new but the committer line, which
    git formats itself (`git var`)."""
    raw = run_git(["cat-file", "commit", commit], repo=path).stdout
    headers, _, message = raw.partition(b"\n\n")
    lines = headers.split(b"\n")
    author = next((line for line in lines if line.startswith(b"author ")), None)
    if author is None:
        raise Conflict(f"commit {commit[:12]} has no author", code="bad_commit")
    encoding = b"".join(line + b"\n" for line in lines if line.startswith(b"encoding "))
    ident = run_git(
        ["var", "GIT_COMMITTER_IDENT"], repo=path, env=_ident_env(committer, committer)
    ).stdout.strip()
    body = (
        f"tree {tree}\nparent {parent}\n".encode()
        + author
        + b"\ncommitter "
        + ident
        + b"\n"
        + encoding
        + b"\n"
        + message
    )
    return run_git(
        ["hash-object", "--literally", "-t", "commit", "-w", "--stdin"], repo=path, input=body
    ).text.strip()
