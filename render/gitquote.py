"""git's C-quoted paths read back: the form git prints a path in outside -z output (diff
headers, blame's porcelain), quoted when it holds bytes that are not printable ASCII, `"` or
`\\`. Pure: the diff parser (render.diffs) and repos' blame both read it."""

from __future__ import annotations

_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}


def unquote_path(name: bytes) -> bytes:
    """A path as git prints it outside -z output: C-quoted (`"a\\tb"`, octal escapes for
    bytes that are not printable ASCII) when it holds such bytes, `"` or `\\`, else bare."""
    if not (len(name) >= 2 and name.startswith(b'"') and name.endswith(b'"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        if body[i : i + 1] == b"\\" and i + 1 < len(body):
            nxt = body[i + 1 : i + 2]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if body[i + 1 : i + 4].isdigit():
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
        out += body[i : i + 1]
        i += 1
    return bytes(out)
