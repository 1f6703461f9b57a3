"""A file's bytes as text for the editor, and the typed text back to bytes in the file's own
encoding and line endings.

Encodings, named as Python's codecs: "utf-8", "utf-8-sig" (UTF-8 with a byte-order mark),
"utf-16-le" and "utf-16-be" (only with their byte-order mark: without one, UTF-16 cannot be
told from binary). Anything else is binary: a latin-1 fallback would decode every byte
sequence, so a binary or Shift-JIS file would be "edited" into garbage. NUL characters mean
binary too, as they do to git.

Browsers send a textarea's content with CRLF line endings whatever the file had, and turn a
lone CR into CRLF, so a file holding a CR that ends no line cannot go through the editor
unchanged: it is offered for upload instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from repos.errors import InvalidInput

Eol = Literal["lf", "crlf", "mixed"]

BOMS = {
    "utf-8-sig": b"\xef\xbb\xbf",
    "utf-16-le": b"\xff\xfe",
    "utf-16-be": b"\xfe\xff",
}
UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")


@dataclass(frozen=True)
class Decoded:
    text: str  # with the file's own line endings, without the byte-order mark
    encoding: str
    eol: Eol
    crlf: int
    lf: int

    @property
    def editor_text(self) -> str:
        return self.text.replace("\r\n", "\n")

    @property
    def stray_cr(self) -> bool:
        return self.text.count("\r") != self.crlf


def _encoding_of(data: bytes) -> str:
    if data.startswith(UTF32_BOMS):
        return ""
    for name, bom in BOMS.items():
        if data.startswith(bom):
            return name
    return "utf-8"


def decode(data: bytes) -> Decoded | None:
    """The content as text, or None when it is binary."""
    encoding = _encoding_of(data)
    if not encoding:
        return None
    body = data[len(BOMS.get(encoding, b"")) :]
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        text = body.decode(codec)
    except UnicodeDecodeError:
        return None
    if "\0" in text:
        return None
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    eol: Eol = "mixed" if crlf and lf else "crlf" if crlf else "lf"
    return Decoded(text, encoding, eol, crlf, lf)


def encode(typed: bytes, *, encoding: str = "utf-8", eol: str = "lf", crlf: int = 0, lf: int = 0) -> bytes:
    """The editor's text (UTF-8, any line endings) as the file's bytes: LF first, then the
    file's line endings (a mixed file gets its majority ending), then its encoding and BOM."""
    try:
        text = typed.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("The text is not valid UTF-8.", fields={"content": ["not UTF-8"]}) from None
    if encoding in BOMS:
        text = text.removeprefix("\ufeff")  # the page may have kept it; the file gets exactly one
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if eol == "crlf" or (eol == "mixed" and crlf >= lf):
        text = text.replace("\n", "\r\n")
    if encoding == "utf-8":
        return text.encode("utf-8")
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    return BOMS[encoding] + text.encode(codec)
