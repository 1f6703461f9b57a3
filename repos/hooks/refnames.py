# Ref names that read as something else: the characters no push may put in a ref name, shared by
# every push policy and by the pages that escape names. Standard library only: installed beside
# the hooks (repos.storage.install_hooks) and imported without Django.
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


def shown(name: str) -> str:
    """The name with every invisible character written as a \\uXXXX escape, for messages."""
    return "".join(f"\\u{ord(c):04x}" if ord(c) in INVISIBLE else c for c in name)


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
