"""sshgit.keyparse against the real ssh-keygen: the same fingerprints and sizes for every type we
accept, and one clear refusal for each thing people paste by mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from sshgit.keyparse import (
    ACCEPTED_TYPES,
    MAX_TEXT,
    PRIVATE_KEY_MESSAGE,
    KeyParseError,
    fingerprint_of,
    parse_key,
)
from tests.sshgit.keygen import (
    b64,
    blob,
    fingerprint_by_ssh_keygen,
    keygen,
    make_key,
    p256_point,
    sk_ecdsa_line,
    sk_ed25519_line,
)


@pytest.fixture(scope="module")
def keydir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("keys")


@pytest.mark.parametrize(
    ("kind", "bits", "key_type"),
    [
        ("ed25519", None, "ssh-ed25519"),
        ("ecdsa", 256, "ecdsa-sha2-nistp256"),
        ("ecdsa", 384, "ecdsa-sha2-nistp384"),
        ("ecdsa", 521, "ecdsa-sha2-nistp521"),
        ("rsa", 3072, "ssh-rsa"),
        ("rsa", 4096, "ssh-rsa"),
    ],
)
def test_generated_keys_parse_as_ssh_keygen_reads_them(keydir, kind, bits, key_type):
    pub = Path(f"{make_key(keydir, kind, bits, comment='alice@laptop two')}.pub")
    expected_bits, expected_fingerprint, _label = fingerprint_by_ssh_keygen(pub)
    text = pub.read_text()
    parsed = parse_key(text)
    assert parsed.key_type == key_type
    assert parsed.fingerprint == expected_fingerprint
    assert parsed.bits == expected_bits == (bits or 256)
    assert parsed.comment == "alice@laptop two"
    # key_data is the blob as ssh-keygen wrote it: sshd compares it with what the client offers.
    assert parsed.line == " ".join(text.split()[:2])


def test_rsa_2048_is_refused_with_its_size(keydir):
    pub = Path(f"{make_key(keydir, 'rsa', 2048)}.pub")
    with pytest.raises(KeyParseError) as refused:
        parse_key(pub.read_text())
    assert str(refused.value) == "RSA keys need at least 3072 bits; this one has 2048"
    # The server's own host keys are only fingerprinted: a lower floor is allowed there.
    assert parse_key(pub.read_text(), min_rsa_bits=1024).fingerprint == fingerprint_by_ssh_keygen(pub)[1]


@pytest.mark.parametrize(("make", "label"), [(sk_ed25519_line, "ED25519-SK"), (sk_ecdsa_line, "ECDSA-SK")])
def test_security_keys_built_by_hand_match_ssh_keygen(keydir, make, label):
    text = make("yubikey")
    pub = keydir / f"sk_{label}.pub"
    pub.write_text(text)
    bits, fingerprint, shown = fingerprint_by_ssh_keygen(pub)
    parsed = parse_key(text)
    assert (parsed.fingerprint, parsed.bits, parsed.key_type) == (fingerprint, bits, text.split()[0])
    assert shown == label and parsed.comment == "yubikey"


def test_whitespace_around_and_between_fields_is_tolerated(keydir):
    text = Path(f"{make_key(keydir)}.pub").read_text()
    key_type, data, comment = text.split(None, 2)
    expected = parse_key(text)
    for variant in (
        f"  {key_type}\t{data}   {comment}",
        f"{key_type} {data}\r\n",
        f"\n{key_type}  {data}\n\n",
    ):
        parsed = parse_key(variant)
        assert (parsed.fingerprint, parsed.key_data) == (expected.fingerprint, expected.key_data)
    assert parse_key(f"{key_type} {data}").comment == ""


def test_a_private_key_is_refused_with_the_file_to_paste(keydir):
    private = make_key(keydir)
    with pytest.raises(KeyParseError, match=r"^This is a private key: paste the \.pub file$"):
        parse_key(private.read_text())
    assert str(KeyParseError(PRIVATE_KEY_MESSAGE)) == "This is a private key: paste the .pub file"


def test_certificates_are_refused(keydir):
    ca = make_key(keydir, comment="ca")
    user = make_key(keydir)
    keygen(["-q", "-s", str(ca), "-I", "alice", "-n", "alice", f"{user}.pub"])
    cert = Path(f"{user}-cert.pub").read_text()
    assert cert.startswith("ssh-ed25519-cert-v01@openssh.com ")
    with pytest.raises(KeyParseError, match=r"^Certificates are not accepted"):
        parse_key(cert)


def test_two_keys_at_once_are_refused(keydir):
    two = Path(f"{make_key(keydir)}.pub").read_text() + Path(f"{make_key(keydir)}.pub").read_text()
    with pytest.raises(KeyParseError, match=r"^Paste one key only"):
        parse_key(two)


def test_dsa_keys_are_refused():
    dss = blob(b"ssh-dss", b"\x01" * 128, b"\x01" * 20, b"\x01" * 128, b"\x01" * 128)
    with pytest.raises(KeyParseError, match=r"^DSA keys \(ssh-dss\) are not accepted.*ssh-keygen -t ed25519"):
        parse_key(f"ssh-dss {b64(dss)} old@box")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "^Paste a public key"),
        ("   \n ", "^Paste a public key"),
        ("ssh-foo AAAA", "^Unknown key type 'ssh-foo': accepted are ssh-ed25519, "),
        ("hello world", "^Unknown key type 'hello'"),
        ("ssh-ed25519", "^The key's base64 data is missing"),
        ("ssh-ed25519 AAAA$$$$", "^The key's base64 data is not valid"),
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", "^The key's base64 data is not valid"),
        ('command="ls" ssh-ed25519 AAAA', "^Remove the options in front of the key type"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "^This is a private key"),
        ("---- BEGIN SSH2 PUBLIC KEY ----\nAAAA\n---- END SSH2 PUBLIC KEY ----", "SSH2 .RFC 4716. format"),
        ("ssh-ed25519 " + "A" * MAX_TEXT, "^This is too long"),
    ],
)
def test_refusals_say_what_is_wrong(text, message):
    with pytest.raises(KeyParseError, match=message):
        parse_key(text)


def _refused(key_type: str, data: bytes) -> str:
    with pytest.raises(KeyParseError) as refused:
        parse_key(f"{key_type} {b64(data)}")
    return str(refused.value)


def test_the_blob_is_checked_field_by_field():
    key = b"\x07" * 32
    good = blob(b"ssh-ed25519", key)
    assert parse_key(f"ssh-ed25519 {b64(good)}").fingerprint == fingerprint_of(good)
    assert "does not match its data" in _refused("ssh-rsa", good)
    assert "does not match its data" in _refused("ssh-ed25519", blob(b"ssh-ed25519x", key))
    assert "extra bytes" in _refused("ssh-ed25519", good + b"\0")
    assert "truncated" in _refused("ssh-ed25519", good[:-1])
    assert "32 bytes" in _refused("ssh-ed25519", blob(b"ssh-ed25519", key + b"\0"))
    assert "application is empty" in _refused(
        "sk-ssh-ed25519@openssh.com", blob(b"sk-ssh-ed25519@openssh.com", key, b"")
    )
    assert "truncated" in _refused("sk-ssh-ed25519@openssh.com", blob(b"sk-ssh-ed25519@openssh.com", key))


def test_ecdsa_points_must_be_uncompressed_and_on_the_curve():
    t = b"ecdsa-sha2-nistp256"
    point = p256_point()
    assert parse_key(f"{t.decode()} {b64(blob(t, b'nistp256', point))}").bits == 256
    assert "curve is not nistp256" in _refused(t.decode(), blob(t, b"nistp384", point))
    compressed = bytes([2 + (point[-1] & 1)]) + point[1:33]
    assert "uncompressed" in _refused(t.decode(), blob(t, b"nistp256", compressed))
    off_curve = point[:-1] + bytes([point[-1] ^ 1])
    assert "not on the curve" in _refused(t.decode(), blob(t, b"nistp256", off_curve))


def test_rsa_numbers_are_checked():
    n = (1 << 3071) | 1
    e = (65537).to_bytes(3, "big")
    modulus = n.to_bytes(384, "big")
    good = blob(b"ssh-rsa", e, b"\x00" + modulus)
    assert parse_key(f"ssh-rsa {b64(good)}").bits == 3072
    # A modulus with its top bit set and no leading zero is a negative mpint.
    assert "negative" in _refused("ssh-rsa", blob(b"ssh-rsa", e, modulus))
    assert "not a valid RSA key" in _refused("ssh-rsa", blob(b"ssh-rsa", b"\x02", b"\x00" + modulus))
    huge = ((1 << 16400) | 1).to_bytes(2051, "big")
    assert "at most 16384" in _refused("ssh-rsa", blob(b"ssh-rsa", e, b"\x00" + huge))


def test_every_accepted_type_is_listed_once():
    assert len(set(ACCEPTED_TYPES)) == len(ACCEPTED_TYPES) == 7
