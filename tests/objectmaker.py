"""Writing the objects of tests.objectclasses: raw trees, commits and tags, byte by byte.

`Maker` writes with `git hash-object --literally`, so an object is exactly what an old or
hostile tool would write; the recipes below (`root`, `author`, `dotfile`, ...) each make a
`Case`'s bad object on top of a base commit; `build` turns a case into a ref and `raw_pack`
into the pack a hand-made receive-pack request carries.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from repos import objectcheck

IDENT = b"A U Thor <author@example.invalid> 1112911993 -0700"
COMMIT, TREE, TAG, BLOB = "commit", "tree", "tag", "blob"
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
        return self.raw(BLOB, data)

    def tree(self, *entries, sort: bool = True) -> str:
        """A tree of (mode, name, oid) entries, modes written as given; sorted as git sorts
        them (a subtree as if its name ended in "/") unless `sort` is false."""
        entries = [
            (mode, name.encode() if isinstance(name, str) else name, oid) for mode, name, oid in entries
        ]
        if sort:
            entries.sort(key=lambda e: e[1] + (b"/" if e[0].lstrip("0") == "40000" else b""))
        return self.raw(
            TREE, b"".join(m.encode() + b" " + n + b"\0" + bytes.fromhex(o) for m, n, o in entries)
        )

    def readme(self) -> tuple[str, str, str]:
        return ("100644", "README", self.blob(b"base\n"))

    def commit(
        self, tree: str, parents=(), *, author: bytes = b"author " + IDENT, message: bytes = b"legacy\n"
    ) -> str:
        head = f"tree {tree}\n".encode() + b"".join(f"parent {p}\n".encode() for p in parents)
        return self.raw(COMMIT, head + author + b"\ncommitter " + IDENT + b"\n\n" + message)


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


# --- how each kind of bad object is made -------------------------------------------------------


def root(*entries, sort: bool = True):
    """The bad object is the root tree of a commit on the base: README plus `entries`, each
    (mode, name, content) with content bytes (a blob), a callable (maker -> oid) or an oid."""

    def make(m: Maker, base: str, base_tree: str) -> Bad:
        made = [
            (mode, name, m.blob(c) if isinstance(c, bytes) else c(m) if callable(c) else c)
            for mode, name, c in entries
        ]
        return in_commit(m, base, m.tree(m.readme(), *made) if sort else m.tree(*made, sort=False))

    return make


def in_commit(m: Maker, base: str, tree: str) -> Bad:
    return Bad(m.commit(tree, [base]), tree)


def subtree(m: Maker) -> str:
    return m.tree(m.readme())


def author(line: bytes):
    def make(m: Maker, base: str, base_tree: str) -> Bad:
        commit = m.commit(base_tree, [base], author=b"author " + line)
        return Bad(commit, commit)

    return make


def raw_object(kind: str, body: Callable[[str, str], bytes]):
    """The bad object is a commit or tag written from `body(base, base_tree)`."""

    def make(m: Maker, base: str, base_tree: str) -> Bad:
        oid = m.raw(kind, body(base, base_tree))
        return Bad(oid, oid)

    return make


def tag(name: bytes = b"v1", tagger: bytes = b"tagger " + IDENT + b"\n", extra: bytes = b""):
    return raw_object(
        TAG,
        lambda b, t: (
            f"object {b}\ntype commit\ntag ".encode() + name + b"\n" + tagger + extra + b"\nlegacy tag\n"
        ),
    )


def commit_with(*headers: bytes, message: bytes = b"m\n"):
    return raw_object(
        COMMIT, lambda b, t: f"tree {t}\nparent {b}\n".encode() + b"".join(headers) + b"\n" + message
    )


def filler(m: Maker) -> str:
    blobs = [m.blob(f"filler {i}\n".encode()) for i in range(INDEX_PACK_OBJECTS)]
    return m.tree(*(("100644", f"{i:03}", oid) for i, oid in enumerate(blobs)))


def dotfile(content: bytes, *, name: str = ".gitmodules", mode: str = "100644", fill: bool = False):
    """The bad object is a .gitmodules (or .gitattributes) blob, or the tree naming it as a
    symlink; `fill` makes the push big enough for index-pack."""

    def make(m: Maker, base: str, base_tree: str) -> Bad:
        target = subtree(m) if mode == "40000" else m.blob(content)
        tree = m.tree(m.readme(), (mode, name, target), *([("40000", "fill", filler(m))] if fill else []))
        return Bad(m.commit(tree, [base]), tree if mode == "120000" else target)

    return make


def missing(name: str):
    """A root tree naming a .gitmodules/.gitattributes blob that is never sent."""

    def make(m: Maker, base: str, base_tree: str) -> Bad:
        absent = "dead" * 10
        tree = m.tree(m.readme(), ("100644", name, absent), ("40000", "fill", filler(m)))
        return Bad(m.commit(tree, [base]), absent, omit=(absent,))

    return make


# --- building -----------------------------------------------------------------------------------


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
    ref = f"refs/tags/case-{case.msg_id}" if case.kind == TAG else f"refs/heads/case/{case.msg_id}"
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
