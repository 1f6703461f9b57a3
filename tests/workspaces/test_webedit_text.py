"""A file through the editor and back is the same bytes when nobody changed the text: whatever
its encoding and line endings, and although the browser sends CRLF for every line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workspaces.webedit import text

ENCODINGS = {
    "utf-8": lambda s: s.encode("utf-8"),
    "utf-8-sig": lambda s: b"\xef\xbb\xbf" + s.encode("utf-8"),
    "utf-16-le": lambda s: b"\xff\xfe" + s.encode("utf-16-le"),
    "utf-16-be": lambda s: b"\xfe\xff" + s.encode("utf-16-be"),
}
# Text a file may hold: no NUL (binary), no CR (the line endings are added below), no lone
# surrogates (not encodable), and not starting with a BOM of its own.
LINES = st.lists(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0\r\n\ufeff"), max_size=20),
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(lines=LINES, encoding=st.sampled_from(sorted(ENCODINGS)), eol=st.sampled_from(["\n", "\r\n"]))
def test_unchanged_text_round_trips(lines, encoding, eol):
    data = ENCODINGS[encoding]("".join(line + eol for line in lines))
    decoded = text.decode(data)
    assert decoded is not None and decoded.encoding == encoding
    assert decoded.eol == ("crlf" if eol == "\r\n" and lines else "lf")
    typed = decoded.editor_text.replace("\n", "\r\n").encode("utf-8")  # what a browser posts
    again = text.encode(typed, encoding=decoded.encoding, eol=decoded.eol, crlf=decoded.crlf, lf=decoded.lf)
    assert again == data


def test_binary_and_unsafe_contents():
    for data in (b"\x00\x01", b"caf\xe9", b"\xff\xfe\x00\x00utf-32", b"\xff\xfe\x00\xd8", b"ok\x00"):
        assert text.decode(data) is None, data
    decoded = text.decode(b"a\rb\r\n")
    assert decoded is not None and decoded.stray_cr
