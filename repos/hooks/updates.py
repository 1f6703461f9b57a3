# One ref update as git reports it to a hook (`<old> <new> <ref>`), shared by the hooks, the
# push policies and the web process. Standard library only: the hooks' handlers touch no
# database (tests/repos/test_pushpolicy.py).
from __future__ import annotations

ZERO_OID = "0" * 40


def is_zero(oid: str) -> bool:
    """git's null id, on either side of an update, for SHA-1 and SHA-256 repositories."""
    return bool(oid) and set(oid) == {"0"}


class Update:
    __slots__ = ("new", "old", "ref")

    def __init__(self, old: str, new: str, ref: str):
        self.old, self.new, self.ref = old, new, ref

    def __repr__(self) -> str:
        return f"Update({self.old!r}, {self.new!r}, {self.ref!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Update) and (self.old, self.new, self.ref) == (
            other.old,
            other.new,
            other.ref,
        )

    def __hash__(self) -> int:
        return hash((self.old, self.new, self.ref))

    @property
    def is_create(self) -> bool:
        return is_zero(self.old)

    @property
    def is_delete(self) -> bool:
        return is_zero(self.new)
