"""Real objects of every class the object checks (repos.objectcheck) decide about.

Each `Case` builds, in a non-bare repository, a history `base commit -> commit or tag holding
one bad object`, written byte by byte with `git hash-object --literally` (raw tree entries, raw
commit and tag headers): the object is exactly what an old or hostile tool would write. Push,
import and mirror tests share them:

    from tests.objectclasses import CASES, build
    built = build(CASES["zeroPaddedFilemode"], tmp_path / "src", git_env)
    # built.ref (refs/heads/case/<id> or refs/tags/case-<id>) -> built.tip; built.bad_oid

- `CASES[msg_id]`: a case for each id an object can trigger through a transfer on git 2.39.
  `case.accepted` is the policy's decision. `case.raw`: git's own client cannot pack the history
  (its object walk stops at the bad object); send `raw_pack(workdir, env, built.objects)`, a
  pack of explicit ids, in a hand-made receive-pack request. `case.server_config`: what the
  receiving repository must be configured with for the check to fire (see `case.note`).
- `UNREACHABLE[msg_id]`: the known ids no object can trigger through a transfer, and why;
  `uncovered()` lists known ids in neither table (a test keeps it empty).
- `UNPARSEABLE[msg_id]`: (case, what git says instead) for objects git refuses before its
  checks can name them; tests send them too, to show that they are refused all the same.
- `fsck_ids(path, env, msg_id)`: what `git fsck` reports, to prove a case triggers its id.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from repos import objectcheck

IDENT = b"A U Thor <author@example.invalid> 1112911993 -0700"
_ZERO = "0" * 40
_C, _T, _TAG, _BLOB = "commit", "tree", "tag", "blob"
# receive-pack hands a pack of this many objects or more (receive.unpackLimit) to index-pack
# instead of unpack-objects; only index-pack checks a blob as it streams in (the *Large cases).
INDEX_PACK_OBJECTS = 100


class Maker:
    """Writes raw objects into one repository and remembers every object it wrote."""

    def __init__(self, path: Path, env: dict[str, str]):
        self.path, self.env = path, env
        self.objects: list[str] = []

    def raw(self, kind: str, data: bytes) -> str:
        oid = (
            subprocess.run(
                ["git", "-C", str(self.path), "hash-object", "--literally", "-t", kind, "-w", "--stdin"],
                input=data,
                env=self.env,
                capture_output=True,
                check=True,
                timeout=120,
            )
            .stdout.decode()
            .strip()
        )
        if oid not in self.objects:
            self.objects.append(oid)
        return oid

    def blob(self, data: bytes) -> str:
        return self.raw(_BLOB, data)

    def tree(self, *entries, sort: bool = True) -> str:
        """A tree of (mode, name, oid) entries, modes written as given; sorted as git sorts
        them (a subtree as if its name ended in "/") unless `sort` is false."""
        entries = [
            (mode, name.encode() if isinstance(name, str) else name, oid) for mode, name, oid in entries
        ]
        if sort:
            entries.sort(key=lambda e: e[1] + (b"/" if e[0].lstrip("0") == "40000" else b""))
        return self.raw(_T, b"".join(m.encode() + b" " + n + b"\0" + bytes.fromhex(o) for m, n, o in entries))

    def readme(self) -> tuple[str, str, str]:
        return ("100644", "README", self.blob(b"base\n"))

    def commit(
        self, tree: str, parents=(), *, author: bytes = b"author " + IDENT, message: bytes = b"legacy\n"
    ) -> str:
        head = f"tree {tree}\n".encode() + b"".join(f"parent {p}\n".encode() for p in parents)
        return self.raw(_C, head + author + b"\ncommitter " + IDENT + b"\n\n" + message)


@dataclass(frozen=True)
class Bad:
    tip: str  # what the ref points at
    bad_oid: str  # the object that triggers the check
    omit: tuple[str, ...] = ()  # named by the history but never written (left out of raw packs)


@dataclass(frozen=True)
class Case:
    msg_id: str
    kind: str  # the bad object's type
    make: Callable[[Maker, str, str], Bad]  # (maker, base commit, base tree) -> Bad
    raw: bool = False
    server_config: tuple[tuple[str, str], ...] = ()
    note: str = ""

    @property
    def check(self) -> objectcheck.Check:
        return objectcheck.check_for(self.msg_id)

    @property
    def accepted(self) -> bool:
        return self.check.decision == objectcheck.ACCEPT


@dataclass(frozen=True)
class Built:
    case: Case
    ref: str  # the local ref holding the history
    tip: str
    bad_oid: str
    base: str  # the base commit
    objects: tuple[str, ...]  # every object of the history (what a raw pack carries)


# --- how each kind of bad object is made ---------------------------------------------------------


def _root(*entries, sort: bool = True):
    """The bad object is the root tree of a commit on the base: README plus `entries`, each
    (mode, name, content) with content bytes (a blob), a callable (maker -> oid) or an oid."""

    def make(m: Maker, base: str, base_tree: str) -> Bad:
        made = [
            (mode, name, m.blob(c) if isinstance(c, bytes) else c(m) if callable(c) else c)
            for mode, name, c in entries
        ]
        return _in_commit(m, base, m.tree(m.readme(), *made) if sort else m.tree(*made, sort=False))

    return make


def _in_commit(m: Maker, base: str, tree: str) -> Bad:
    return Bad(m.commit(tree, [base]), tree)


def _subtree(m: Maker) -> str:
    return m.tree(m.readme())


def _author(line: bytes):
    def make(m: Maker, base: str, base_tree: str) -> Bad:
        commit = m.commit(base_tree, [base], author=b"author " + line)
        return Bad(commit, commit)

    return make


def _raw(kind: str, body: Callable[[str, str], bytes]):
    """The bad object is a commit or tag written from `body(base, base_tree)`."""

    def make(m: Maker, base: str, base_tree: str) -> Bad:
        oid = m.raw(kind, body(base, base_tree))
        return Bad(oid, oid)

    return make


def _tag(name: bytes = b"v1", tagger: bytes = b"tagger " + IDENT + b"\n", extra: bytes = b""):
    return _raw(
        _TAG,
        lambda b, t: (
            f"object {b}\ntype commit\ntag ".encode() + name + b"\n" + tagger + extra + b"\nlegacy tag\n"
        ),
    )


def _commit(*headers: bytes, message: bytes = b"m\n"):
    return _raw(_C, lambda b, t: f"tree {t}\nparent {b}\n".encode() + b"".join(headers) + b"\n" + message)


def _fill(m: Maker) -> str:
    blobs = [m.blob(f"filler {i}\n".encode()) for i in range(INDEX_PACK_OBJECTS)]
    return m.tree(*(("100644", f"{i:03}", oid) for i, oid in enumerate(blobs)))


def _dotfile(content: bytes, *, name: str = ".gitmodules", mode: str = "100644", fill: bool = False):
    """The bad object is a .gitmodules (or .gitattributes) blob, or the tree naming it as a
    symlink; `fill` makes the push big enough for index-pack."""

    def make(m: Maker, base: str, base_tree: str) -> Bad:
        target = _subtree(m) if mode == "40000" else m.blob(content)
        tree = m.tree(m.readme(), (mode, name, target), *([("40000", "fill", _fill(m))] if fill else []))
        return Bad(m.commit(tree, [base]), tree if mode == "120000" else target)

    return make


def _missing(name: str):
    """A root tree naming a .gitmodules/.gitattributes blob that is never sent."""

    def make(m: Maker, base: str, base_tree: str) -> Bad:
        absent = "dead" * 10
        tree = m.tree(m.readme(), ("100644", name, absent), ("40000", "fill", _fill(m)))
        return Bad(m.commit(tree, [base]), absent, omit=(absent,))

    return make


_AUTHOR, _COMMITTER = b"author " + IDENT + b"\n", b"committer " + IDENT + b"\n"
_SUBMODULE = b'[submodule "lib"]\n\tpath = lib\n\turl = https://example.invalid/lib.git\n'
_LOW_THRESHOLD = (("core.bigFileThreshold", "1k"),)

_ALL = [
    # Accepted: legacy formats.
    Case("zeroPaddedFilemode", _T, _root(("040000", "sub", _subtree))),
    Case("badFilemode", _T, _root(("100664", "group-writable", b"x\n"))),
    Case("nullSha1", _T, _root(("160000", "sub", _ZERO))),
    Case("missingTaggerEntry", _TAG, _tag(tagger=b"")),
    Case("badTagName", _TAG, _tag(name=b"wrong name format")),
    Case("extraHeaderEntry", _TAG, _tag(extra=b"some garbage\n")),
    Case("badTimezone", _C, _author(b"A U Thor <author@example.invalid> 1112911993 -07")),
    Case("missingSpaceBeforeDate", _C, _author(b"A U Thor <author@example.invalid>1112911993 -0700")),
    Case("missingSpaceBeforeEmail", _C, _author(b"A U Thor<author@example.invalid> 1112911993 -0700")),
    Case("badDate", _C, _author(b"A U Thor <author@example.invalid> yesterday -0700")),
    Case("badDateOverflow", _C, _author(b"A U Thor <author@example.invalid> 99999999999999999999 -0700")),
    Case("missingEmail", _C, _author(b"A U Thor 1112911993 -0700")),
    Case("badEmail", _C, _author(b"A U Thor <author@example.invalid 1112911993 -0700")),
    Case("badName", _C, _author(b"A U Thor> <author@example.invalid> 1112911993 -0700")),
    Case("zeroPaddedDate", _C, _author(b"A U Thor <author@example.invalid> 01112911993 -0700")),
    Case("missingNameBeforeEmail", _C, _author(b"<author@example.invalid> 1112911993 -0700")),
    Case("multipleAuthors", _C, _author(IDENT + b"\nauthor " + IDENT)),
    Case("nulInCommit", _C, _commit(_AUTHOR, _COMMITTER, message=b"converted\0from cvs\n")),
    Case("gitmodulesParse", _BLOB, _dotfile(b'[submodule "lib"\n\tpath = lib\n')),
    Case("gitignoreSymlink", _T, _root(("120000", ".gitignore", b"../../etc/passwd"))),
    Case("mailmapSymlink", _T, _root(("120000", ".mailmap", b"../../etc/passwd"))),
    # Refused: paths that hurt a checkout.
    Case("hasDot", _T, _root(("40000", ".", _subtree))),
    Case("hasDotdot", _T, _root(("40000", "..", _subtree))),
    Case("hasDotgit", _T, _root(("40000", ".git", _subtree))),
    Case("fullPathname", _T, _root(("100644", "a/b", b"x\n"))),
    Case("duplicateEntries", _T, _root(("100644", "a", b"1\n"), ("100644", "a", b"2\n"), sort=False)),
    Case("treeNotSorted", _T, _root(("100644", "b", b"1\n"), ("100644", "a", b"2\n"), sort=False)),
    Case("badTree", _T, lambda m, b, t: _in_commit(m, b, m.raw(_T, b"100644 truncated")), raw=True),
    # Refused: hostile .gitmodules and .gitattributes.
    Case("gitmodulesName", _BLOB, _dotfile(_SUBMODULE.replace(b'"lib"', b'"../../hooks"'))),
    Case("gitmodulesPath", _BLOB, _dotfile(_SUBMODULE.replace(b"path = lib", b"path = --upload-pack=x"))),
    Case(
        "gitmodulesUrl",
        _BLOB,
        _dotfile(
            _SUBMODULE.replace(b"https://example.invalid/lib.git", b"--upload-pack=touch$IFS/tmp/pwned")
        ),
    ),
    Case("gitmodulesUpdate", _BLOB, _dotfile(_SUBMODULE + b"\tupdate = !rm -rf ~\n")),
    Case("gitmodulesSymlink", _T, _dotfile(b"../../.git/config", mode="120000")),
    Case("gitmodulesBlob", _T, _dotfile(b"", mode="40000")),
    Case(
        "gitmodulesLarge",
        _BLOB,
        _dotfile(_SUBMODULE + b"#" * 4096 + b"\n", fill=True),
        server_config=_LOW_THRESHOLD,
        note="index-pack cannot parse a .gitmodules over core.bigFileThreshold (512 MiB), which it "
        "streams; the case lowers the receiving repository's threshold instead of sending 512 MiB",
    ),
    Case("gitattributesSymlink", _T, _dotfile(b"../../.git/config", name=".gitattributes", mode="120000")),
    Case("gitattributesBlob", _T, _dotfile(b"", name=".gitattributes", mode="40000")),
    Case("gitattributesLineLength", _BLOB, _dotfile(b"*.c " + b"x" * 4096 + b"\n", name=".gitattributes")),
    Case(
        "gitattributesLarge",
        _BLOB,
        _dotfile(b"*.c text\n" * 200, name=".gitattributes", fill=True),
        server_config=_LOW_THRESHOLD,
        note="the real trigger is a .gitattributes over 100 MiB, or one index-pack streams (over "
        "core.bigFileThreshold); the case lowers the receiving repository's threshold",
    ),
    # Refused: objects that do not parse reliably.
    Case("missingAuthor", _C, _commit(_COMMITTER)),
    Case("missingCommitter", _C, _commit(_AUTHOR)),
    Case("nulInHeader", _C, _author(b"A U Thor <author@example.invalid> 1112911993 -0700\0hidden")),
    Case(
        "unterminatedHeader",
        _C,
        _raw(_C, lambda b, t: f"tree {t}\nparent {b}\n".encode() + _AUTHOR + _COMMITTER.rstrip(b"\n")),
    ),
]
CASES: dict[str, Case] = {case.msg_id: case for case in _ALL}

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
    "emptyName": (Case("badTree", _T, _root(("100644", "", b"x\n")), raw=True), "badTree"),
    "gitmodulesMissing": (
        Case("gitmodulesMissing", _BLOB, _missing(".gitmodules"), raw=True),
        "did not receive expected object",
    ),
    "gitattributesMissing": (
        Case("gitattributesMissing", _BLOB, _missing(".gitattributes"), raw=True),
        "did not receive expected object",
    ),
    **{
        msg_id: (
            Case(
                msg_id,
                _C,
                _raw(_C, lambda b, t, head=head: head(b, t).encode() + _AUTHOR + _COMMITTER + b"\nm\n"),
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
        msg_id: (Case(msg_id, _TAG, _raw(_TAG, body), raw=True), "invalid tag")
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


# --- building and checking ------------------------------------------------------------------------


def build(case: Case, workdir: Path, env: dict[str, str]) -> Built:
    """Build the case's history in `workdir` (created if needed; cases may share one) and point
    `refs/heads/case/<id>` (a commit) or `refs/tags/case-<id>` (a tag) at it."""
    workdir = Path(workdir)
    if not (workdir / ".git").exists():
        subprocess.run(
            ["git", "init", "--quiet", "-b", "main", str(workdir)], env=env, check=True, capture_output=True
        )
    m = Maker(workdir, env)
    base_tree = m.tree(m.readme())
    base = m.commit(base_tree, message=b"base\n")
    bad = case.make(m, base, base_tree)
    ref = f"refs/tags/case-{case.msg_id}" if case.kind == _TAG else f"refs/heads/case/{case.msg_id}"
    # update-ref refuses a tip git cannot parse: such a ref is written as a file.
    if (
        subprocess.run(
            ["git", "-C", str(workdir), "update-ref", ref, bad.tip], env=env, capture_output=True
        ).returncode
        != 0
    ):
        (workdir / ".git" / ref).parent.mkdir(parents=True, exist_ok=True)
        (workdir / ".git" / ref).write_text(bad.tip + "\n")
    return Built(case, ref, bad.tip, bad.bad_oid, base, tuple(o for o in m.objects if o not in bad.omit))


def raw_pack(workdir: Path, env: dict[str, str], objects) -> bytes:
    """A pack of exactly these objects: pack-objects given ids walks nothing, so it packs
    objects that `git push`, which walks the history, will not read."""
    return subprocess.run(
        ["git", "-C", str(workdir), "pack-objects", "--stdout", "-q"],
        input="".join(f"{oid}\n" for oid in objects).encode(),
        env=env,
        capture_output=True,
        check=True,
        timeout=300,
    ).stdout


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
