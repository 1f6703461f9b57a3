# Ref names that read as something else: the characters no push may put in a ref name, shared by
# every push policy, the hooks' handlers and the pages that escape names. Standard library only:
# the hooks' handlers touch no database (tests/repos/test_pushpolicy.py).
from __future__ import annotations

# Characters that change how a name reads without being seen: C1 controls, bidirectional
# embeddings, overrides and isolates (the "Trojan Source" trick: a ref that displays as
# another), zero-width and joiner characters, the soft hyphen, the byte-order mark, blank
# fillers and spaces that look like the ASCII space git refuses, variation selectors and tags.
INVISIBLE = frozenset(
    cp
    for first, last in (
        (0x80, 0x9F),
        (0xA0, 0xA0),
        (0xAD, 0xAD),
        (0x34F, 0x34F),
        (0x61C, 0x61C),
        (0x115F, 0x1160),
        (0x1680, 0x1680),
        (0x17B4, 0x17B5),
        (0x180B, 0x180F),
        (0x2000, 0x200F),
        (0x2028, 0x202F),
        (0x205F, 0x206F),
        (0x3000, 0x3000),
        (0x3164, 0x3164),
        (0xFE00, 0xFE0F),
        (0xFEFF, 0xFEFF),
        (0xFFA0, 0xFFA0),
        (0xFFF9, 0xFFFB),
        (0x1D173, 0x1D17A),
        (0xE0000, 0xE007F),
        (0xE0100, 0xE01EF),
    )
    for cp in range(first, last + 1)
)


# A name's bytes that are not UTF-8, as surrogateescape keeps them (U+DC80..U+DCFF): git passes
# names as bytes, and an imported repository may hold such names.
UNDECODABLE = range(0xDC80, 0xDD00)


def _shown(char: str) -> str:
    cp = ord(char)
    if cp in UNDECODABLE:
        return f"\\x{cp - 0xDC00:02x}"
    return f"\\u{cp:04x}" if cp in INVISIBLE else char


def shown(name: str) -> str:
    """The name with every invisible character written as a \\uXXXX escape, and every byte
    that is not UTF-8 as \\xNN, for messages."""
    return "".join(_shown(c) for c in name)


def undecodable_reason(ref: str) -> str | None:
    """Why a ref name that is not UTF-8 (its bytes kept by surrogateescape) is refused, or None."""
    if not any(ord(c) in UNDECODABLE for c in ref):
        return None
    return f"{shown(ref)} is not UTF-8 (\\xNN marks each byte that is not); push it under a UTF-8 name"


def judged_name(ref: str, *, deleting: bool) -> tuple[str, str | None]:
    """The name a push policy judges a ref update under, and why the update is refused before
    any policy sees it (None: judge it). A name that is not UTF-8 may not be created or moved;
    deleting one (an import brings them) is judged under its escaped name, which no other ref
    can have: git refuses a backslash in a name. The pre-receive hook and the web's own ref
    writes (repos.gitaccess.policy) both ask this."""
    reason = undecodable_reason(ref)
    if reason is None:
        return ref, None
    return shown(ref), None if deleting else reason


def invisible_reason(ref: str) -> str | None:
    """Why a ref name with invisible characters is refused, or None."""
    found = sorted({ord(c) for c in ref if ord(c) in INVISIBLE})
    if not found:
        return None
    chars = ", ".join(f"U+{cp:04X}" for cp in found)
    return (
        f"{shown(ref)} contains invisible or direction-changing characters ({chars}), which make a "
        f"ref name display as something else; push it under a name without them"
    )
