"""One OpenSSH public key line (`type base64 [comment]`, as in a .pub file) to what we store.

The wire blob is decoded here rather than handed to a library, because what matters is small
and exact: the type inside the blob must equal the one outside, each type's fields must be
there with nothing after them, and the fingerprint is sha256 of the blob itself, so it equals
what `ssh-keygen -l -E sha256` prints and what sshd passes the AuthorizedKeysCommand (%f).
Every refusal says what to do instead: people paste the wrong file far more often than a
malicious one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric import ec

MAX_TEXT = 16 * 1024  # a 16384-bit RSA key's line is under 3 KiB
MIN_RSA_BITS = 3072  # NIST's level past 2030; GitHub and GitLab moved the same way
MAX_RSA_BITS = 16384  # OpenSSH's own ceiling (SSH_RSA_MAXIMUM_MODULUS_SIZE)

SK_ECDSA = "sk-ecdsa-sha2-nistp256@openssh.com"
SK_ED25519 = "sk-ssh-ed25519@openssh.com"
_CURVES = {
    "ecdsa-sha2-nistp256": ("nistp256", ec.SECP256R1(), 256),
    "ecdsa-sha2-nistp384": ("nistp384", ec.SECP384R1(), 384),
    "ecdsa-sha2-nistp521": ("nistp521", ec.SECP521R1(), 521),
    SK_ECDSA: ("nistp256", ec.SECP256R1(), 256),
}
ACCEPTED_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    SK_ED25519,
    SK_ECDSA,
)
# Names an `authorized_keys` line may start with that we know but refuse, each with its reason.
_DSA = "ssh-dss"
_CERT_SUFFIX = "-cert-v01@openssh.com"

PRIVATE_KEY_MESSAGE = "This is a private key: paste the .pub file"


class KeyParseError(ValueError):
    """The text is not one acceptable public key; str() is the message for the user."""


@dataclass(frozen=True)
class ParsedKey:
    key_type: str
    key_data: str  # the blob re-encoded: canonical base64, whatever spacing was pasted
    fingerprint: str
    bits: int
    comment: str

    @property
    def line(self) -> str:
        return f"{self.key_type} {self.key_data}"


def fingerprint_of(blob: bytes) -> str:
    """`SHA256:<unpadded base64>`, exactly as ssh-keygen and sshd print it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


def parse_key(text: str, *, min_rsa_bits: int = MIN_RSA_BITS) -> ParsedKey:
    """Parse one public key line; raise KeyParseError with the reason for anything else.
    `min_rsa_bits` is lowered only to fingerprint keys we do not accept from people (the
    server's own host keys)."""
    if not isinstance(text, str):
        raise KeyParseError("Paste a public key.")
    if len(text) > MAX_TEXT:
        raise KeyParseError(f"This is too long to be a public key (at most {MAX_TEXT // 1024} KiB).")
    _refuse_other_formats(text)
    stripped = text.strip()
    if not stripped:
        raise KeyParseError("Paste a public key: the contents of a .pub file, such as ~/.ssh/id_ed25519.pub.")
    if "\n" in stripped or "\r" in stripped:
        raise KeyParseError("Paste one key only: this text has more than one line.")
    fields = stripped.split(None, 2)
    key_type = fields[0]
    _check_type(key_type, fields)
    if len(fields) < 2:
        raise KeyParseError("The key's base64 data is missing after its type.")
    blob = _decode(fields[1])
    comment = fields[2].strip() if len(fields) > 2 else ""
    bits = _check_blob(key_type, blob, min_rsa_bits=min_rsa_bits)
    return ParsedKey(
        key_type=key_type,
        key_data=base64.b64encode(blob).decode("ascii"),
        fingerprint=fingerprint_of(blob),
        bits=bits,
        comment=comment,
    )


def _refuse_other_formats(text: str) -> None:
    if "PRIVATE KEY-----" in text or text.lstrip().startswith("PuTTY-User-Key-File"):
        raise KeyParseError(PRIVATE_KEY_MESSAGE)
    if "BEGIN SSH2 PUBLIC KEY" in text:
        raise KeyParseError(
            "This key is in the SSH2 (RFC 4716) format: convert it with `ssh-keygen -i -f <file>` "
            "and paste the line that prints."
        )
    if "BEGIN PUBLIC KEY" in text or "BEGIN RSA PUBLIC KEY" in text:
        raise KeyParseError(
            "This is a PEM public key: convert it with `ssh-keygen -i -m PKCS8 -f <file>` "
            "and paste the line that prints."
        )


def _check_type(key_type: str, fields: list[str]) -> None:
    if key_type in ACCEPTED_TYPES:
        return
    if key_type == _DSA:
        raise KeyParseError(
            "DSA keys (ssh-dss) are not accepted: they are weak and OpenSSH no longer supports them. "
            "Create an Ed25519 key: ssh-keygen -t ed25519"
        )
    if key_type.endswith(_CERT_SUFFIX):
        raise KeyParseError(
            "Certificates are not accepted: paste the public key itself (the .pub file, not -cert.pub)."
        )
    if any(part in ACCEPTED_TYPES for part in " ".join(fields).split()[1:]):
        raise KeyParseError(
            "Remove the options in front of the key type: paste the key as ssh-keygen wrote it."
        )
    shown = key_type if len(key_type) <= 40 and key_type.isprintable() else key_type[:40].encode().hex()
    raise KeyParseError(f"Unknown key type '{shown}': accepted are {', '.join(ACCEPTED_TYPES)}.")


def _decode(data: str) -> bytes:
    try:
        blob = base64.b64decode(data.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise KeyParseError("The key's base64 data is not valid: copy the whole line again.") from None
    if not blob:
        raise KeyParseError("The key's base64 data is empty.")
    return blob


class _Reader:
    """SSH wire format (RFC 4251): uint32 length-prefixed strings, mpints as strings."""

    def __init__(self, blob: bytes):
        self.blob = blob
        self.pos = 0

    def string(self) -> bytes:
        if self.pos + 4 > len(self.blob):
            raise KeyParseError("The key data is truncated: copy the whole line again.")
        size = int.from_bytes(self.blob[self.pos : self.pos + 4], "big")
        start = self.pos + 4
        if start + size > len(self.blob):
            raise KeyParseError("The key data is truncated: copy the whole line again.")
        self.pos = start + size
        return self.blob[start : self.pos]

    def positive_mpint(self) -> int:
        raw = self.string()
        if not raw or raw[0] & 0x80:
            raise KeyParseError("The key data is not valid: a number in it is negative or empty.")
        return int.from_bytes(raw, "big")

    def end(self) -> None:
        if self.pos != len(self.blob):
            raise KeyParseError("The key data has extra bytes after the key: copy the line again.")


def _check_blob(key_type: str, blob: bytes, *, min_rsa_bits: int) -> int:
    """Validate the blob for its type; return the key's size in bits, as ssh-keygen shows it."""
    reader = _Reader(blob)
    inner = reader.string()
    if inner != key_type.encode("ascii"):
        raise KeyParseError(
            "The key's type does not match its data: the line says "
            f"{key_type}, the data says {inner[:60].decode('ascii', 'replace')}."
        )
    if key_type == "ssh-rsa":
        bits = _rsa(reader, min_rsa_bits=min_rsa_bits)
    elif key_type in _CURVES:
        bits = _ecdsa(reader, key_type)
    else:  # ssh-ed25519 and its security-key variant
        if len(reader.string()) != 32:
            raise KeyParseError("The key data is not valid: an Ed25519 key is 32 bytes.")
        bits = 256
    # A security key's FIDO application ("ssh:" unless made with -O application=...).
    if key_type.startswith("sk-") and not reader.string():
        raise KeyParseError("The key data is not valid: the security key's application is empty.")
    reader.end()
    return bits


def _rsa(reader: _Reader, *, min_rsa_bits: int) -> int:
    exponent = reader.positive_mpint()
    modulus = reader.positive_mpint()
    bits = modulus.bit_length()
    if exponent < 3 or exponent % 2 == 0 or modulus % 2 == 0:
        raise KeyParseError("The key data is not a valid RSA key.")
    if bits < min_rsa_bits:
        raise KeyParseError(f"RSA keys need at least {min_rsa_bits} bits; this one has {bits}")
    if bits > MAX_RSA_BITS:
        raise KeyParseError(f"RSA keys may have at most {MAX_RSA_BITS} bits; this one has {bits}")
    return bits


def _ecdsa(reader: _Reader, key_type: str) -> int:
    curve_name, curve, bits = _CURVES[key_type]
    if reader.string() != curve_name.encode("ascii"):
        raise KeyParseError(f"The key data is not valid: its curve is not {curve_name}.")
    point = reader.string()
    # Uncompressed only (0x04 || x || y), as OpenSSH writes and requires.
    if len(point) != 1 + 2 * ((bits + 7) // 8) or point[0] != 4:
        raise KeyParseError("The key data is not valid: its point is not an uncompressed curve point.")
    try:
        # Checks the encoding and that the point is on the curve (sshd would refuse it later).
        ec.EllipticCurvePublicKey.from_encoded_point(curve, point)
    except ValueError:
        raise KeyParseError("The key data is not valid: its point is not on the curve.") from None
    return bits
