"""Real objects of every class the object checks (repos.objectcheck) decide about.

Each `Case` builds, in a non-bare repository, a history `base commit -> commit or tag holding
one bad object`, written byte by byte with `git hash-object --literally` (raw tree entries, raw
commit and tag headers): the object is exactly what an old or hostile tool would write. Push,
import and mirror tests share them:

    from tests.objectclasses import CASES, build
    built = build(CASES["zeroPaddedFilemode"], tmp_path / "src", git_env)
    # built.ref (refs/heads/case/<id> or refs/tags/case-<id>) -> built.tip; built.bad_oid

- `CASES[msg_id]`: a case for each id an object can trigger through a transfer with the installed
  git (2.39 or newer: ids a later git added, such as largePathname, only where it knows them).
  `case.accepted` is the policy's decision. `case.raw`: git's own client cannot pack the history
  (its object walk stops at the bad object); send `raw_pack(workdir, env, built.objects)`, a
  pack of explicit ids, in a hand-made receive-pack request. `case.server_config`: what the
  receiving repository must be configured with for the check to fire (see `case.note`).
- `UNREACHABLE[msg_id]`: the known ids no object can trigger through a transfer, and why;
  `uncovered()` lists known ids in neither table (a test keeps it empty).
- `UNPARSEABLE[msg_id]`: (case, what git says instead) for objects git refuses before its
  checks can name them; tests send them too, to show that they are refused all the same.
- `fsck_ids(path, env, msg_id)`: what `git fsck` reports, to prove a case triggers its id.

The objects themselves are written by tests.objectmaker (`Maker`, the recipes, `build`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from repos import objectcheck
from tests.objectmaker import (
    BLOB,
    COMMIT,
    IDENT,
    TAG,
    TREE,
    Built,
    Case,
    Maker,
    author,
    build,
    commit_with,
    dotfile,
    in_commit,
    missing,
    raw_object,
    raw_pack,
    root,
    subtree,
    tag,
)

__all__ = [
    "CASES",
    "UNPARSEABLE",
    "UNREACHABLE",
    "Built",
    "Case",
    "Maker",
    "build",
    "fsck_ids",
    "raw_pack",
    "uncovered",
]

_ZERO = "0" * 40
_AUTHOR, _COMMITTER = b"author " + IDENT + b"\n", b"committer " + IDENT + b"\n"
_SUBMODULE = b'[submodule "lib"]\n\tpath = lib\n\turl = https://example.invalid/lib.git\n'
_LOW_THRESHOLD = (("core.bigFileThreshold", "1k"),)

_ALL = [
    # Accepted: legacy formats.
    Case("zeroPaddedFilemode", TREE, root(("040000", "sub", subtree))),
    Case("badFilemode", TREE, root(("100664", "group-writable", b"x\n"))),
    Case("nullSha1", TREE, root(("160000", "sub", _ZERO))),
    Case("missingTaggerEntry", TAG, tag(tagger=b"")),
    Case("badTagName", TAG, tag(name=b"wrong name format")),
    Case("extraHeaderEntry", TAG, tag(extra=b"some garbage\n")),
    Case("badTimezone", COMMIT, author(b"A U Thor <author@example.invalid> 1112911993 -07")),
    Case("missingSpaceBeforeDate", COMMIT, author(b"A U Thor <author@example.invalid>1112911993 -0700")),
    Case("missingSpaceBeforeEmail", COMMIT, author(b"A U Thor<author@example.invalid> 1112911993 -0700")),
    Case("badDate", COMMIT, author(b"A U Thor <author@example.invalid> yesterday -0700")),
    Case("badDateOverflow", COMMIT, author(b"A U Thor <author@example.invalid> 99999999999999999999 -0700")),
    Case("missingEmail", COMMIT, author(b"A U Thor 1112911993 -0700")),
    Case("badEmail", COMMIT, author(b"A U Thor <author@example.invalid 1112911993 -0700")),
    Case("badName", COMMIT, author(b"A U Thor> <author@example.invalid> 1112911993 -0700")),
    Case("zeroPaddedDate", COMMIT, author(b"A U Thor <author@example.invalid> 01112911993 -0700")),
    Case("missingNameBeforeEmail", COMMIT, author(b"<author@example.invalid> 1112911993 -0700")),
    Case("multipleAuthors", COMMIT, author(IDENT + b"\nauthor " + IDENT)),
    Case("nulInCommit", COMMIT, commit_with(_AUTHOR, _COMMITTER, message=b"converted\0from cvs\n")),
    Case("gitmodulesParse", BLOB, dotfile(b'[submodule "lib"\n\tpath = lib\n')),
    Case("gitignoreSymlink", TREE, root(("120000", ".gitignore", b"../../etc/passwd"))),
    Case("mailmapSymlink", TREE, root(("120000", ".mailmap", b"../../etc/passwd"))),
    # Refused: paths that hurt a checkout.
    Case("hasDot", TREE, root(("40000", ".", subtree))),
    Case("hasDotdot", TREE, root(("40000", "..", subtree))),
    Case("hasDotgit", TREE, root(("40000", ".git", subtree))),
    Case("fullPathname", TREE, root(("100644", "a/b", b"x\n"))),
    Case("largePathname", TREE, root(("100644", "a" * 4097, b"x\n"))),  # git >= 2.43
    Case("duplicateEntries", TREE, root(("100644", "a", b"1\n"), ("100644", "a", b"2\n"), sort=False)),
    Case("treeNotSorted", TREE, root(("100644", "b", b"1\n"), ("100644", "a", b"2\n"), sort=False)),
    Case("badTree", TREE, lambda m, b, t: in_commit(m, b, m.raw(TREE, b"100644 truncated")), raw=True),
    # Refused: hostile .gitmodules and .gitattributes.
    Case("gitmodulesName", BLOB, dotfile(_SUBMODULE.replace(b'"lib"', b'"../../hooks"'))),
    Case("gitmodulesPath", BLOB, dotfile(_SUBMODULE.replace(b"path = lib", b"path = --upload-pack=x"))),
    Case(
        "gitmodulesUrl",
        BLOB,
        dotfile(_SUBMODULE.replace(b"https://example.invalid/lib.git", b"--upload-pack=touch$IFS/tmp/pwned")),
    ),
    Case("gitmodulesUpdate", BLOB, dotfile(_SUBMODULE + b"\tupdate = !rm -rf ~\n")),
    Case("gitmodulesSymlink", TREE, dotfile(b"../../.git/config", mode="120000")),
    Case("gitmodulesBlob", TREE, dotfile(b"", mode="40000")),
    Case(
        "gitmodulesLarge",
        BLOB,
        dotfile(_SUBMODULE + b"#" * 4096 + b"\n", fill=True),
        server_config=_LOW_THRESHOLD,
        note="index-pack cannot parse a .gitmodules over core.bigFileThreshold (512 MiB), which it "
        "streams; the case lowers the receiving repository's threshold instead of sending 512 MiB",
    ),
    Case("gitattributesSymlink", TREE, dotfile(b"../../.git/config", name=".gitattributes", mode="120000")),
    Case("gitattributesBlob", TREE, dotfile(b"", name=".gitattributes", mode="40000")),
    Case("gitattributesLineLength", BLOB, dotfile(b"*.c " + b"x" * 4096 + b"\n", name=".gitattributes")),
    Case(
        "gitattributesLarge",
        BLOB,
        dotfile(b"*.c text\n" * 200, name=".gitattributes", fill=True),
        server_config=_LOW_THRESHOLD,
        note="the real trigger is a .gitattributes over 100 MiB, or one index-pack streams (over "
        "core.bigFileThreshold); the case lowers the receiving repository's threshold",
    ),
    # Refused: objects that do not parse reliably.
    Case("missingAuthor", COMMIT, commit_with(_COMMITTER)),
    Case("missingCommitter", COMMIT, commit_with(_AUTHOR)),
    Case("nulInHeader", COMMIT, author(b"A U Thor <author@example.invalid> 1112911993 -0700\0hidden")),
    Case(
        "unterminatedHeader",
        COMMIT,
        raw_object(
            COMMIT, lambda b, t: f"tree {t}\nparent {b}\n".encode() + _AUTHOR + _COMMITTER.rstrip(b"\n")
        ),
    ),
]
# Only the checks the installed git knows: a newer check's object passes an older git unnamed.
_KNOWN = {check.msg_id for check in objectcheck.known_checks()}
CASES: dict[str, Case] = {case.msg_id: case for case in _ALL if case.msg_id in _KNOWN}

_PARSER = "git's {} parser rejects it first ('{}'): 'invalid {}'"
UNREACHABLE: dict[str, str] = {
    "emptyName": "git's tree parser rejects an empty name first ('empty filename in tree entry'): badTree",
    "gitmodulesMissing": "index-pack --strict needs every object a tree names to arrive or exist: the push "
    "is refused as 'did not receive expected object' before this check runs",
    "gitattributesMissing": "refused as 'did not receive expected object' first, as gitmodulesMissing",
    "missingTree": _PARSER.format("commit", "bogus commit object", "commit"),
    "badTreeSha1": _PARSER.format("commit", "bad tree pointer", "commit"),
    "badParentSha1": _PARSER.format("commit", "bad parents", "commit"),
    **{
        msg_id: _PARSER.format("tag", "no valid object, type and tag lines", "tag")
        for msg_id in (
            "missingObject",
            "badObjectSha1",
            "missingTypeEntry",
            "missingType",
            "missingTagEntry",
            "missingTag",
        )
    },
    "badType": _PARSER.format("tag", "unknown tag type", "tag"),
    "unknownType": "a pack holds only commits, trees, blobs and tags: pack-objects cannot send another type",
}
_TAGGER = b"tagger " + IDENT + b"\n\nm\n"
UNPARSEABLE: dict[str, tuple[Case, str]] = {
    "emptyName": (Case("badTree", TREE, root(("100644", "", b"x\n")), raw=True), "badTree"),
    "gitmodulesMissing": (
        Case("gitmodulesMissing", BLOB, missing(".gitmodules"), raw=True),
        "did not receive expected object",
    ),
    "gitattributesMissing": (
        Case("gitattributesMissing", BLOB, missing(".gitattributes"), raw=True),
        "did not receive expected object",
    ),
    **{
        msg_id: (
            Case(
                msg_id,
                COMMIT,
                raw_object(
                    COMMIT, lambda b, t, head=head: head(b, t).encode() + _AUTHOR + _COMMITTER + b"\nm\n"
                ),
                raw=True,
            ),
            "invalid commit",
        )
        for msg_id, head in {
            "missingTree": lambda b, t: f"parent {b}\n",
            "badTreeSha1": lambda b, t: f"tree {t[:-2]}zz\n",
            "badParentSha1": lambda b, t: f"tree {t}\nparent {b[:-2]}zz\n",
        }.items()
    },
    **{
        msg_id: (Case(msg_id, TAG, raw_object(TAG, body), raw=True), "invalid tag")
        for msg_id, body in {
            "missingObject": lambda b, t: b"type commit\ntag v1\n" + _TAGGER,
            "badObjectSha1": lambda b, t: f"object {b[:-2]}zz\ntype commit\ntag v1\n".encode() + _TAGGER,
            "missingTypeEntry": lambda b, t: f"object {b}\ntag v1\n".encode() + _TAGGER,
            "missingType": lambda b, t: f"object {b}\ntype commit".encode(),
            "badType": lambda b, t: f"object {b}\ntype bogus\ntag v1\n".encode() + _TAGGER,
            "missingTagEntry": lambda b, t: f"object {b}\ntype commit\n".encode() + _TAGGER,
            "missingTag": lambda b, t: f"object {b}\ntype commit\ntag v1".encode(),
        }.items()
    },
}


def uncovered() -> list[str]:
    """Known ids neither covered by a case nor listed as unreachable (must stay empty)."""
    listed = set(CASES) | set(UNREACHABLE)
    return [check.msg_id for check in objectcheck.known_checks() if check.msg_id not in listed]


# --- what git says ---------------------------------------------------------------------------------


_FSCK_LINE = re.compile(r"^(?:error|warning) in \w+ ([0-9a-f]{40,64}): ([A-Za-z][A-Za-z0-9]*): ", re.M)


def fsck_ids(
    path: Path,
    env: dict[str, str],
    msg_id: str,
    *,
    bare: bool = False,
    config: tuple[tuple[str, str], ...] = (),
) -> dict[str, set[str]]:
    """What `git fsck --strict` reports (msg_id -> object ids) with every known id at warn (the
    two git cannot demote stay errors) and `msg_id` at error, so any other finding shows too.
    With `config` (a case's server_config) the objects are packed first: git fsck then reads
    trees before blobs, as index-pack does, and a streamed .gitmodules is seen as one."""
    where = ["--git-dir", str(path)] if bare else ["-C", str(path)]
    args = [arg for key, value in config for arg in ("-c", f"{key}={value}")]
    if config:
        subprocess.run(["git", *where, "repack", "-a", "-d", "-q"], env=env, check=True, capture_output=True)
    for check in objectcheck.known_checks():
        error = check.msg_id == msg_id or check.msg_id.lower() in objectcheck.FATAL
        args += ["-c", f"fsck.{check.msg_id}={'error' if error else 'warn'}"]
    out = subprocess.run(
        ["git", *where, *args, "fsck", "--strict", "--no-dangling"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found: dict[str, set[str]] = {}
    for oid, found_id in _FSCK_LINE.findall(out.stdout + out.stderr):
        found.setdefault(found_id, set()).add(oid)
    return found
